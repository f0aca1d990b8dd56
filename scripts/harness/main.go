package harness

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main is a TestMain's whole body for the packages that start processes
// and browsers: it runs the tests, then each of after (RemoveBuilds, a
// browser's Stop) in order, then, when the tests passed, checks that no
// goroutine was left running, and exits with the result. The check comes
// after the cleanups because what they stop would otherwise count as
// leaked. Goroutines already running (the libraries' package-level ones,
// started at init) are not the tests' to stop.
func Main(m *testing.M, after ...func()) {
	atInit := goleak.IgnoreCurrent()
	code := m.Run()
	for _, f := range after {
		f()
	}
	if code == 0 {
		if err := goleak.Find(atInit); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

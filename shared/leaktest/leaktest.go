// Package leaktest checks that a test binary leaves no goroutine running,
// with goleak, beside the ones the libraries under the targets keep by
// design.
package leaktest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// GnetWorkers leaves out gnet's package-level worker pool (ants):
// Engine.Register runs on it, and it keeps idle workers for 10 s.
var GnetWorkers = goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*goWorker).run.func1")

// ZishangTimers leaves out the zishang520 Socket.IO library's one-shot
// timers: it runs each on a goroutine of its own (utils.SetTimeout) that
// lives until the timer fires or is cleared, and some are left to fire
// after a session ends (the polling transport's 30 s orderly close, the
// client's open timeout). A periodic timer (SetInterval) never ends, and
// is still reported.
var ZishangTimers = goleak.IgnoreTopFunction("github.com/zishang520/socket.io/v3/pkg/utils.SetTimeout.func1")

// VerifyTestMain runs m's tests, then fails the binary if a goroutine is
// left that was not running before them (the libraries' package-level
// ones, started at init) and that GnetWorkers and more do not leave out.
func VerifyTestMain(m *testing.M, more ...goleak.Option) {
	goleak.VerifyTestMain(m, append([]goleak.Option{goleak.IgnoreCurrent(), GnetWorkers}, more...)...)
}

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

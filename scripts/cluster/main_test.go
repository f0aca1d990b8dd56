package cluster

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.RemoveBuilds()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

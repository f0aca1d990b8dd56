package admin_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/harness/browser"
)

// TestMain stops the one browser the dashboard tests share, then checks
// that nothing was left running: not the dashboard's fetches of replicas,
// not the browser's connection.
func TestMain(m *testing.M) {
	code := m.Run()
	browser.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

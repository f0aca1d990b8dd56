package admin_test

import (
	"testing"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/harness/browser"
)

// TestMain stops the one browser the dashboard tests share, then checks
// that nothing was left running: not the dashboard's fetches of replicas,
// not the browser's connection.
func TestMain(m *testing.M) { harness.Main(m, browser.Stop) }

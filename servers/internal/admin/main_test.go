package admin_test

import (
	"testing"

	"github.com/knowngood/knowngood/shared/browser"
	"github.com/knowngood/knowngood/shared/leaktest"
)

// TestMain stops the one browser the dashboard tests share, then checks
// that nothing was left running: not the dashboard's fetches of replicas,
// not the browser's connection.
func TestMain(m *testing.M) { leaktest.Main(m, browser.Stop) }

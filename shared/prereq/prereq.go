// Package prereq is how a test asks for an external tool (Chromium, Node,
// redis-server, nginx, Python): skipped where it is missing, failed in CI.
package prereq

import (
	"os"
	"testing"
)

// Need skips a test whose external tool is missing (err says why), except
// in CI, where .ci/run has installed everything (make deps) and a missing
// tool is a failure.
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (%v); .ci/run should have installed it (make deps)", what, err)
	}
	t.Skipf("%s is missing (%v): run make deps", what, err)
}

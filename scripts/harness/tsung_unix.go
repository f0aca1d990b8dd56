//go:build unix

package harness

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// LockTsung holds the machine's tsung lock until the test ends. tsung's
// controller is an Erlang node of one name a host (tsung_controller@HOST):
// a second run at the same time fails at once ("seems to be in use by
// another Erlang node"), and more than one package runs tsung (loadgen's
// TestWatchTsung, the README's recipe in scripts/readme), maybe at the
// same time. Every test that runs it takes this lock.
func LockTsung(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "knowngood-tsung.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // which releases the lock
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("locking %s: %v", f.Name(), err)
	}
}

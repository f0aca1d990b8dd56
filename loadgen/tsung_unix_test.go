//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// lockTsung holds the machine's tsung lock until the test ends. tsung's
// controller is an Erlang node of one name a host (tsung_controller@HOST):
// a second run at the same time fails at once ("seems to be in use by
// another Erlang node"), and scripts/readme's test runs the recipe too,
// maybe at the same time as this package. It takes the same lock.
func lockTsung(t *testing.T) {
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

//go:build !unix

package harness

import "testing"

// LockTsung has nothing to lock where there is no flock: tsung, a Debian
// package, is not there either (the tests that run it skip).
func LockTsung(testing.TB) {}

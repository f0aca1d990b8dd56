//go:build !unix

package main

import "testing"

// lockTsung has nothing to lock where there is no flock: tsung, a
// Debian package, is not there either (TestWatchTsung skips).
func lockTsung(*testing.T) {}

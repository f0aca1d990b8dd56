//go:build !unix

package conns

import "syscall"

// errnoName: the errno names (EMFILE, ...) are a Unix table; elsewhere the
// reason is "other".
func errnoName(syscall.Errno) string { return "" }

//go:build !linux

package target

import "syscall"

// bindControl: only Linux has IP_BIND_ADDRESS_NO_PORT.
func bindControl(string, string, syscall.RawConn) error { return nil }

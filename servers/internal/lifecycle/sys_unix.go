//go:build unix

package lifecycle

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func signalName(s syscall.Signal) string { return unix.SignalName(s) }

// relisten calls listen(2) again on a listening socket, which changes its
// backlog.
func relisten(fd uintptr, backlog int) error { return syscall.Listen(int(fd), backlog) }

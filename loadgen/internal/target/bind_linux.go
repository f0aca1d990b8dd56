package target

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// bindControl sets IP_BIND_ADDRESS_NO_PORT on a socket about to be bound to
// a source address: the kernel then picks its port at connect time, unique
// per (source, target) pair rather than per source, so that other
// processes' connections from the same address (tests running alongside)
// take nothing from this run's ports. A refusal is harmless.
func bindControl(network, _ string, c syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return nil
	}
	return c.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	})
}

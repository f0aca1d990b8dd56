package wsserver

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// fionread is the ioctl that reads a socket's queued input: FIONREAD,
// _IOR('f', 127, int), which x/sys/unix does not export for darwin.
const fionread = 0x4004667f

// socketpairFDs: darwin has no SOCK_CLOEXEC, so close-on-exec is set under
// the fork lock, as the standard library does, before any exec can see
// the descriptors.
func socketpairFDs() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return fds, nil
}

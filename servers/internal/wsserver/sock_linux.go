package wsserver

import "golang.org/x/sys/unix"

// fionread is the ioctl that reads a socket's queued input (FIONREAD).
const fionread = unix.TIOCINQ

func socketpairFDs() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
}

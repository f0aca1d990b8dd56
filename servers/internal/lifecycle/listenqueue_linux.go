package lifecycle

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// acceptQueue reads a listening socket's accept queue: for a listener,
// Linux's TCP_INFO gives the handshakes waiting in it (tcpi_unacked) and
// the most it holds (tcpi_sacked), as ss -lt shows them.
func acceptQueue(raw syscall.RawConn) (queued, limit int, err error) {
	var info *unix.TCPInfo
	ctlErr := raw.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	if ctlErr != nil {
		return 0, 0, ctlErr
	}
	if err != nil {
		return 0, 0, err
	}
	return int(info.Unacked), int(info.Sacked), nil
}

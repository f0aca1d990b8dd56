//go:build unix

package main

import (
	"cmp"
	"context"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// holdPort is a free TCP port on 127.0.0.1, held by a listener with
// SO_REUSEPORT until the caller closes it, once nginx listens there too.
// nginx listens with reuseport, and a second nginx given the same port
// would share it, the kernel splitting the connections between two runs
// (two experiments side by side, or two users'): while the port is held,
// no one else's bind to port 0 is given it, and once nginx has it, nginx
// holds it. Until then the port is taken by this listener alone, which no
// client dials.
func holdPort() (int, io.Closer, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
		return cmp.Or(err, serr)
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	return ln.Addr().(*net.TCPAddr).Port, ln, nil
}

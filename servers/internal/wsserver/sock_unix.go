//go:build linux || darwin

package wsserver

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// rawSockets: a plain TCP connection's descriptor is asked how much input
// waits (inputBytes) and written without waiting (writeFD).
const rawSockets = true

// inputBytes is how many bytes wait in the socket's receive queue; 0 when
// it cannot tell.
func inputBytes(fd uintptr) int {
	n, err := unix.IoctlGetInt(int(fd), fionread)
	if err != nil {
		return 0
	}
	return n
}

// writeFD writes what the socket takes at once, once, whatever it wrote.
func writeFD(fd uintptr, b []byte) { _, _ = unix.Write(int(fd), b) }

// shutdownWrite sends FIN on a gnet connection's socket.
func shutdownWrite(fd int) { _ = unix.Shutdown(fd, unix.SHUT_WR) }

// socketpair is a connected pair of Unix stream sockets as net.Conns.
func socketpair() (inner, outer *net.UnixConn, err error) {
	fds, err := socketpairFDs()
	if err != nil {
		return nil, nil, err
	}
	conns := make([]*net.UnixConn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "tls-bridge")
		c, err := net.FileConn(f) // a duplicate of fd
		_ = f.Close()
		if err != nil {
			for _, c := range conns[:i] {
				_ = c.Close()
			}
			for _, fd := range fds[i+1:] {
				_ = unix.Close(fd)
			}
			return nil, nil, err
		}
		conns[i] = c.(*net.UnixConn)
	}
	return conns[0], conns[1], nil
}

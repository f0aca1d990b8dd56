//go:build unix

package siolite

import (
	"errors"

	"golang.org/x/sys/unix"
)

// writeNow writes b on the socket fd at once, from the caller's
// goroutine: through the loop (AsyncWrite) every write would cost a
// wake-up of the loop (an eventfd write, an epoll_wait) besides the write
// itself, more than the reads the loop saves. It returns what did not
// fit in the socket's buffer (the server is not reading) for the loop to
// write, and an error that ends the connection.
func writeNow(fd int, b []byte) (rest []byte, err error) {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return b, nil
		case err != nil:
			return nil, err
		}
		b = b[n:]
	}
	return nil, nil
}

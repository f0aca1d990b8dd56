//go:build !linux

package lifecycle

import (
	"errors"
	"syscall"
)

// acceptQueue: only Linux tells a listener's accept queue (TCP_INFO).
func acceptQueue(syscall.RawConn) (queued, limit int, err error) {
	return 0, 0, errors.New("the accept queue is read on Linux only")
}

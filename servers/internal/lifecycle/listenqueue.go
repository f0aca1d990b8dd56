package lifecycle

import (
	"net"
	"syscall"

	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/protocol"
)

// listenQueue returns what reads the kernel's side of ln, a listener with
// the given backlog in effect: the namespace's listen-queue overflows and
// drops since now, and ln's accept queue (Linux; -1 elsewhere).
func listenQueue(ln net.Listener, backlog int) func() protocol.ListenQueue {
	base, baseErr := procfs.ReadListenQueue()
	var raw syscall.RawConn
	if sc, ok := ln.(syscall.Conn); ok {
		raw, _ = sc.SyscallConn()
	}
	return func() protocol.ListenQueue {
		q := protocol.ListenQueue{Queued: -1, Limit: -1}
		if now, err := procfs.ReadListenQueue(); err == nil && baseErr == nil {
			q.Overflows = now.Overflows - min(base.Overflows, now.Overflows)
			q.Drops = now.Drops - min(base.Drops, now.Drops)
		}
		if raw != nil {
			if queued, limit, err := acceptQueue(raw); err == nil {
				q.Queued, q.Limit = queued, limit
			}
		}
		if q.Limit < 0 && backlog > 0 {
			q.Limit = backlog
		}
		return q
	}
}

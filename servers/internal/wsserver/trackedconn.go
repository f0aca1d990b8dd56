package wsserver

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// trackingListener wraps every connection in a trackedConn. Failed
// accepts are counted below it (conns.GuardedListener).
type trackingListener struct {
	net.Listener
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		// Unwrapped, so that net/http sees a temporary error as one and
		// retries.
		return nil, err
	}
	tc := &trackedConn{Conn: c}
	if sc, ok := c.(syscall.Conn); ok && rawSockets {
		tc.raw, _ = sc.SyscallConn() // plain TCP; nil in TLS
	}
	return tc, nil
}

// trackedConn notes when the first byte of the upgrade request came (the
// handshake clock starts there, whatever the library) and how reading
// ended, for the connections that never reach a handler.
type trackedConn struct {
	net.Conn
	first   atomic.Int64  // unix nanoseconds of the first byte read; 0 before
	read    atomic.Uint32 // reads that brought bytes: the keepalive's sign of life
	left    atomic.Bool   // a read ended with EOF or a reset: the client went away
	handled atomic.Bool   // a handler took a request from this connection

	// Replies held back (see holdWrites): on when the reader has begun a
	// batch, off once what it held has gone out.
	coalesce bool            // set once before serving: a connection without a queue
	raw      syscall.RawConn // the socket, to ask whether input is waiting; nil in TLS
	held     atomic.Bool
	opening  atomic.Bool // held from the upgrade until the session is open
	wmu      sync.Mutex
	pending  *[]byte // under wmu; a pooled buffer while held
	waiting  int     // bytes in the socket's receive queue, as inputWaiting found
	heldRead int     // bytes read since replies began to be held (the reader's alone)
	probe    func(fd uintptr)

	// Messages and replies counted by the reader and not yet added to the
	// metrics (batchCounts): added before each read, so once per batch, as
	// gnet adds its counts once per loop turn, instead of four updates of
	// counters that every connection shares for every echo; and always
	// before the replies can reach the client. Atomic, since coder also
	// reads from the goroutine that closes.
	m           *metrics.Metrics
	batchCounts bool
	rx, tx      pendingCounts
}

// pendingCounts are messages and their bytes not yet added to the metrics.
type pendingCounts struct{ msgs, bytes atomic.Int64 }

func (p *pendingCounts) add(n int) {
	p.msgs.Add(1)
	p.bytes.Add(int64(n))
}

// take returns the counts and zeroes them.
func (p *pendingCounts) take() (msgs, bytes int) {
	if p.msgs.Load() == 0 {
		return 0, 0
	}
	return int(p.msgs.Swap(0)), int(p.bytes.Swap(0))
}

// received counts a message from the client.
func (c *trackedConn) received(n int) {
	if !c.batchCounts {
		c.m.Received(1, n)
		return
	}
	c.rx.add(n)
}

// sent counts a reply.
func (c *trackedConn) sent(n int) {
	if !c.batchCounts {
		c.m.Sent(1, n)
		return
	}
	c.tx.add(n)
}

// flushCounts adds the batch's counts to the metrics.
func (c *trackedConn) flushCounts() {
	c.m.Received(c.rx.take())
	c.m.Sent(c.tx.take())
}

// holdOpening holds every write, the 101 first, until openDone, so that
// the handler opens the session before the client can read its 101.
// Unlike a batch, a read does not end it: net/http's background read may
// still be running.
func (c *trackedConn) holdOpening() {
	c.opening.Store(true)
	c.held.Store(true)
}

// openDone writes the 101 and what was written behind it, and ends the
// hold.
func (c *trackedConn) openDone() error {
	c.opening.Store(false)
	return c.flush()
}

func (c *trackedConn) holdWrites() {
	if c.coalesce && !c.held.Load() {
		c.held.Store(true)
	}
}

// batch holds a queued connection's writes until flush: its writer has
// more messages queued behind the one it writes, and sends them together.
// Every write takes wmu on such a connection (one without coalesce), so
// that the library's own frames (a pong, the close) stay in order with the
// batch.
func (c *trackedConn) batch() { c.held.Store(true) }

// heldLimit: past it, held replies are flushed at once; the TCP floor's
// read buffer.
const heldLimit = 16 << 10

// inputWaiting reports whether the client's next bytes are in the socket
// already, so that the next read will not wait for them.
func (c *trackedConn) inputWaiting() bool {
	if c.raw == nil {
		return false
	}
	if c.probe == nil {
		c.probe = func(fd uintptr) {
			c.waiting = inputBytes(fd)
		}
	}
	if err := c.raw.Control(c.probe); err != nil {
		return false
	}
	return c.waiting > 0
}

func (c *trackedConn) Write(p []byte) (int, error) {
	if c.held.Load() || !c.coalesce {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if c.held.Load() {
			if c.pending == nil {
				c.pending = wsframe.GetBuffer()
			}
			*c.pending = append(*c.pending, p...)
			if len(*c.pending) >= heldLimit {
				return len(p), c.writeHeldLocked()
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// flush writes what is held and ends the hold.
func (c *trackedConn) flush() error {
	if !c.held.Load() {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.held.Store(false)
	return c.writeHeldLocked()
}

func (c *trackedConn) writeHeldLocked() error {
	if c.pending == nil {
		return nil
	}
	c.flushCounts() // counted before the client can see the replies
	b := c.pending
	c.pending = nil
	_, err := c.Conn.Write(*b)
	wsframe.PutBuffer(b)
	return err
}

// Close sends what is held first (coder closes the connection itself right
// after it has answered a client's close frame), without waiting: what a
// client that does not read has no room for is lost, as any write to it
// would be. A writer stuck on such a client keeps the lock: Close then
// closes at once, which unblocks it.
func (c *trackedConn) Close() error {
	if c.held.Load() && c.wmu.TryLock() {
		c.held.Store(false)
		if c.pending != nil {
			c.writeNoWait(*c.pending)
			wsframe.PutBuffer(c.pending)
			c.pending = nil
		}
		c.wmu.Unlock()
	}
	return c.Conn.Close()
}

// writeNoWait writes what the socket takes at once.
func (c *trackedConn) writeNoWait(b []byte) {
	if c.raw == nil {
		// TLS: a record cannot be written in part without waiting. (Or
		// no descriptor to write to on this OS: see rawSockets.)
		_ = c.Conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Conn.Write(b)
		return
	}
	_ = c.raw.Write(func(fd uintptr) bool {
		writeFD(fd, b)
		return true // once, whatever it wrote
	})
}

func (c *trackedConn) Read(p []byte) (int, error) {
	c.flushCounts()
	// Only the reader's own replies are flushed here. A queued
	// connection's writer flushes its batch itself; were the reader to do
	// it, a client that does not read would stop its own reader too (the
	// flush waits for the writer's stuck write), and its messages would go
	// unread.
	if c.coalesce && c.held.Load() && !c.opening.Load() {
		// As the TCP floor writes once per read of up to 64 KiB: a long
		// stream of input does not hold the replies to its start.
		if c.heldRead >= heldLimit || !c.inputWaiting() {
			c.heldRead = 0
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
	} else if c.heldRead != 0 {
		c.heldRead = 0
	}
	n, err := c.Conn.Read(p)
	if c.held.Load() {
		c.heldRead += n
	}
	if n > 0 {
		c.read.Add(1)
		if c.first.Load() == 0 {
			c.first.Store(time.Now().UnixNano())
		}
	}
	if err != nil && conns.ClientLeft(err) {
		c.left.Store(true)
	}
	return n, err
}

func (c *trackedConn) sinceFirstByte() time.Duration {
	first := c.first.Load()
	if first == 0 {
		return 0
	}
	return time.Since(time.Unix(0, first))
}

// linger ends a connection whose reader a library has given up on, after
// the server has sent its close frame: it sends FIN, then reads and drops
// whatever the client still sends (the rest of an oversized message, its
// close frame) until the client closes or closeWait passes. Closing at once
// with unread data would send RST, and the client could lose the close frame.
func (c *trackedConn) linger() {
	_ = c.SetWriteDeadline(time.Now().Add(closeWait))
	_ = c.flush() // the close frame, if held
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(closeWait))
	buf := wsframe.GetBuffer()
	defer wsframe.PutBuffer(buf)
	b := (*buf)[:cap(*buf)]
	for {
		if _, err := c.Conn.Read(b); err != nil {
			return
		}
	}
}

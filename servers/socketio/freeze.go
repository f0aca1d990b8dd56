package socketio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knowngood/knowngood/shared/config"
)

// freezer puts every request and WebSocket read of the blocking model
// through its loop, on either engine and every transport, so that a
// connect handler holding the loop freezes what the real single-threaded
// servers freeze:
//   - a request (a polling GET or POST, an upgrade) waits for its turn
//     before the engine sees it, and under node an open for two: Node
//     accepts a connection in one pass and reads its request in a later
//     one. A POST's body has been read before (wholeBody), as the real
//     servers read it without holding the loop; its packets are handled
//     in its turn;
//   - bytes read from a WebSocket wait for a turn, held until the engine
//     comes back for more: other sockets' events, acks and pongs, and the
//     CONNECTs, whose handlers then hold that same turn;
//   - what the engine writes (the 101 and the open packet, acks, pings,
//     polling responses) leaves as the model says (loop.writable).
type freezer struct {
	l          *loop
	maxPayload int64 // the engine's limit (-max-payload), which bounds an outbox
	// left counts an open whose client went before its turn came.
	left func(*http.Request)
	// slots maps an Engine.IO session id to its *turnSlot (bind).
	slots sync.Map
}

type slotKey struct{}

// newFreezer freezes on l; nil (the other models) freezes nothing. left
// counts an open whose client left while it waited for its turns.
func newFreezer(l *loop, maxPayload int64, left func(*http.Request)) *freezer {
	if l == nil {
		return nil
	}
	return &freezer{l: l, maxPayload: maxPayload, left: left}
}

// handler serves next through the loop.
func (f *freezer) handler(next http.Handler) http.Handler {
	if f == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.URL.Query().Get("sid")
		slot, _ := f.slots.Load(sid)
		if slot == nil {
			slot = &turnSlot{}
		}
		ts := slot.(*turnSlot)
		fw := &frozenWriter{ResponseWriter: w, f: f, slot: ts}
		r = r.WithContext(context.WithValue(r.Context(), slotKey{}, ts))
		if sid == "" && f.l.model == config.BlockingNode {
			// An open comes on a new connection, which Node accepts in one
			// pass of its loop and reads in a later one, each behind the
			// work already waiting: an open that arrives during a burst
			// waits for it twice (measured beside Node's socket.io; under
			// asyncio, whose answers wait anyway, one turn is what
			// python-socketio on uvicorn was measured to do).
			f.l.acquire().done()
		}
		t := f.l.acquire()
		if sid == "" && r.Context().Err() != nil {
			// The client left while its open waited: the engine would
			// count a failed upgrade; it is an abandoned handshake.
			t.done()
			f.left(r)
			return
		}
		if r.Method != http.MethodPost {
			// A GET waits for its turn, then for data without holding the
			// loop, as a long-poll or an upgrade does on the real servers.
			t.done()
			next.ServeHTTP(fw, r)
		} else {
			ts.current.Store(t)
			next.ServeHTTP(fw, r)
			ts.current.CompareAndSwap(t, nil)
			t.done()
		}
		fw.finish()
	})
}

// bind ties an Engine.IO session to the turn slot of its open request (r),
// so that its later requests find it; the slot, nil without a freezer.
func (f *freezer) bind(sid string, r *http.Request) *turnSlot {
	if f == nil {
		return nil
	}
	slot, _ := r.Context().Value(slotKey{}).(*turnSlot)
	if slot == nil {
		slot = &turnSlot{}
	}
	f.slots.Store(sid, slot)
	return slot
}

// settle calls done once an answer made now has left under the loop's
// model, with whether the session's client had gone before its connect
// handler ended: a handshake is done when its CONNECT ack leaves, and
// one whose client left before the ack was made was abandoned, though
// the engine, frozen, had not yet read that it left. A client that leaves
// once its ack is made is not: it may have read the ack already, as the
// ack leaves with the barrier it was written under, which can come
// before this answer's. Without a freezer, at once.
func (f *freezer) settle(slot *turnSlot, done func(gone bool)) {
	if f == nil {
		done(false)
		return
	}
	ready := f.l.writable()
	select {
	case <-ready:
		done(slot.goneBeforeAnswer())
	default:
		go func() {
			<-ready
			done(slot.goneBeforeAnswer())
		}()
	}
}

// unbind forgets a closed session.
func (f *freezer) unbind(sid string) {
	if f != nil {
		f.slots.Delete(sid)
	}
}

// frozenWriter holds a response until the loop lets it leave: the status
// and body are kept until the engine's handler returns, then written once
// the model allows, whole, as Node's engine.io ends a polling response in
// one write. A connection the engine hijacks (a WebSocket) is frozen as a
// frozenConn instead.
type frozenWriter struct {
	http.ResponseWriter
	f        *freezer
	slot     *turnSlot
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (w *frozenWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *frozenWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

// Flush keeps the response: it leaves whole when the handler returns.
func (w *frozenWriter) Flush() {}

func (w *frozenWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.hijacked = true
	// Bytes the client sent right behind its request, which the HTTP
	// server has read already, wait for their turn too.
	var src io.Reader = conn
	if n := brw.Reader.Buffered(); n > 0 {
		ahead, _ := brw.Reader.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), conn)
	}
	fc := &frozenConn{Conn: conn, src: src, l: w.f.l, slot: w.slot, maxOutbox: 4*w.f.maxPayload + 64<<10,
		chunks: make(chan chunk, 1), closed: make(chan struct{})}
	go fc.pump()
	brw.Reader.Reset(fc)
	brw.Writer.Reset(fc)
	return fc, brw, nil
}

// finish writes the response the handler left, once the loop allows.
func (w *frozenWriter) finish() {
	if w.hijacked || w.status == 0 {
		return
	}
	<-w.f.l.writable()
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(w.body.Bytes())
}

// flushWait bounds one write of a frozen connection's outbox: a client
// that reads nothing for that long is dropped.
const flushWait = 10 * time.Second

var errOutboxFull = errors.New("blocking: a client that does not read has more queued than the bound")

// frozenConn is a hijacked connection (a WebSocket) on the loop. A read's
// bytes wait for a turn, which lasts until the engine reads again (it has
// handled them, and any connect handler they started has ended). The
// socket itself is read ahead by a chunk (pump), as the kernel buffers
// what a frozen server has not read: a client that has left is known at
// once (turnSlot.left), while its last bytes still wait for their turn.
// Under asyncio, writes go to an outbox that a writer of its own sends as
// the loop allows, so that no write ever waits inside the engine (a reader
// holding its turn may write).
type frozenConn struct {
	net.Conn
	src       io.Reader
	l         *loop
	slot      *turnSlot
	maxOutbox int64

	chunks chan chunk    // from pump: one chunk read ahead at most
	closed chan struct{} // closed by Close: pump and Read stop
	once   sync.Once
	// rest and readErr are the reader's: what is left of the chunk it
	// took, and the error that ended the stream.
	rest    []byte
	readErr error
	held    atomic.Pointer[turn] // the turn of the bytes last read

	mu       sync.Mutex
	outbox   []pending
	queued   int64 // bytes in outbox
	flushing bool
	closing  bool
	err      error
}

// chunk is one read of the socket: bytes, or the error that ended it.
type chunk struct {
	data []byte
	err  error
}

// pending is a write in the outbox and when it may leave.
type pending struct {
	data     []byte
	writable <-chan struct{}
}

// readAhead is the size of one read of the socket.
const readAhead = 4096

// pump reads the socket into chunks until it ends.
func (c *frozenConn) pump() {
	for {
		buf := make([]byte, readAhead)
		n, err := c.src.Read(buf)
		if err != nil {
			c.slot.left.Store(true)
		}
		if n > 0 || err != nil {
			select {
			case c.chunks <- chunk{buf[:n], err}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *frozenConn) Read(p []byte) (int, error) {
	c.endTurn()
	if c.isClosed() {
		// Bytes left from a chunk are never handed on once the engine
		// closed the connection: a reader that then stops reading would
		// hold their turn, and the loop, for ever.
		return 0, net.ErrClosed
	}
	if len(c.rest) == 0 && c.readErr == nil {
		select {
		case ch := <-c.chunks:
			c.rest, c.readErr = ch.data, ch.err
		case <-c.closed:
			c.readErr = net.ErrClosed
		}
	}
	if len(c.rest) == 0 {
		return 0, c.readErr
	}
	t := c.l.acquire()
	c.held.Store(t)
	c.slot.current.Store(t)
	if c.isClosed() {
		// Closed while this read waited for its turn: Close has ended
		// whatever turn it found, so this one ends here.
		c.endTurn()
		return 0, net.ErrClosed
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// isClosed reports whether Close has been called.
func (c *frozenConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// endTurn ends the turn of the bytes last read, once.
func (c *frozenConn) endTurn() {
	if t := c.held.Swap(nil); t != nil {
		c.slot.current.CompareAndSwap(t, nil)
		t.done()
	}
}

func (c *frozenConn) Write(p []byte) (int, error) {
	if c.l.model != config.BlockingAsyncio {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.err != nil:
		return 0, c.err
	case c.closing:
		return 0, net.ErrClosed
	case c.queued+int64(len(p)) > c.maxOutbox:
		return 0, errOutboxFull
	}
	c.outbox = append(c.outbox, pending{data: bytes.Clone(p), writable: c.l.writable()})
	c.queued += int64(len(p))
	if !c.flushing {
		c.flushing = true
		go c.flush()
	}
	return len(p), nil
}

// flush sends the outbox in order, each write once it may leave, until
// the outbox is empty; a Close that came meanwhile closes after it.
func (c *frozenConn) flush() {
	for {
		c.mu.Lock()
		if len(c.outbox) == 0 || c.err != nil {
			c.flushing = false
			closing := c.closing
			c.mu.Unlock()
			if closing {
				_ = c.Conn.Close()
			}
			return
		}
		next := c.outbox[0]
		c.outbox[0] = pending{}
		c.outbox = c.outbox[1:]
		c.mu.Unlock()
		<-next.writable
		_ = c.Conn.SetWriteDeadline(time.Now().Add(flushWait))
		_, err := c.Conn.Write(next.data)
		c.mu.Lock()
		c.queued -= int64(len(next.data))
		if err != nil {
			c.err = err
		}
		c.mu.Unlock()
		if err != nil {
			_ = c.Conn.Close()
		}
	}
}

// Close ends the reader's turn and closes the connection; under asyncio,
// after what the outbox holds has been sent.
func (c *frozenConn) Close() error {
	// closed first, then the turn: a Read that takes a turn after this
	// sees closed and ends it itself (endTurn's swap ends each turn once).
	c.once.Do(func() { close(c.closed) })
	c.endTurn()
	c.mu.Lock()
	c.closing = true
	if c.flushing {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

// The outbox's writer sets its own write deadline (flushWait); the
// engine's apply to reads only under asyncio.
func (c *frozenConn) SetDeadline(t time.Time) error {
	if c.l.model != config.BlockingAsyncio {
		return c.Conn.SetDeadline(t)
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *frozenConn) SetWriteDeadline(t time.Time) error {
	if c.l.model != config.BlockingAsyncio {
		return c.Conn.SetWriteDeadline(t)
	}
	return nil
}

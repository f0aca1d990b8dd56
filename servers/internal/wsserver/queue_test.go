package wsserver

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeWS is a library connection that frames nothing: a message goes to
// the TCP connection as its bytes, so that what the writer batches shows
// as the connection's writes.
type fakeWS struct {
	raw *trackedConn

	mu     sync.Mutex
	msgs   []string
	closed []int
	failAt int // the write that fails, from 1; 0 = none
}

func (f *fakeWS) serve(Session) string { return "" }

func (f *fakeWS) write(_ Op, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAt != 0 && len(f.msgs)+1 == f.failAt {
		return errors.New("broken pipe")
	}
	f.msgs = append(f.msgs, string(data))
	_, err := f.raw.Write(data)
	return err
}

func (f *fakeWS) ping(time.Duration) error { return nil }

func (f *fakeWS) close(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = append(f.closed, code)
}

func (f *fakeWS) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.msgs)
}

func (f *fakeWS) closes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.closed)
}

// recordConn is a TCP connection that records each write; reads wait
// until it is closed.
type recordConn struct {
	mu     sync.Mutex
	writes []string
	done   chan struct{}
	once   sync.Once
}

func newRecordConn() *recordConn { return &recordConn{done: make(chan struct{})} }

func (c *recordConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

func (c *recordConn) Read([]byte) (int, error)         { <-c.done; return 0, net.ErrClosed }
func (c *recordConn) Close() error                     { c.once.Do(func() { close(c.done) }); return nil }
func (c *recordConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *recordConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *recordConn) SetDeadline(time.Time) error      { return nil }
func (c *recordConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordConn) SetWriteDeadline(time.Time) error { return nil }

func (c *recordConn) written() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.writes)
}

// queuedPeer is a connection with a send queue of n (0: replies only), on
// fake library and TCP connections, its writer not started.
func queuedPeer(t *testing.T, n int) (*httpPeer, *fakeWS, *recordConn) {
	t.Helper()
	tgt := &httpTarget{opts: Options{Queue: n}, log: slog.New(slog.DiscardHandler)}
	conn := newRecordConn()
	raw := &trackedConn{Conn: conn}
	ws := &fakeWS{raw: raw}
	p := newHTTPPeer(tgt, ws, raw)
	t.Cleanup(func() {
		p.end() // stops the writer
		tgt.closers.Wait()
	})
	return p, ws, conn
}

func enqueue(t *testing.T, p *httpPeer, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if err := p.Enqueue(NewOutgoing([]byte(m))); err != nil {
			t.Fatalf("Enqueue(%q): %v", m, err)
		}
	}
}

// waitWritten waits until the writer has written n messages.
func waitWritten(t *testing.T, ws *fakeWS, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(ws.written()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages written, want %d", len(ws.written()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestQueueBatches: what was queued before the writer started goes out in
// order, in one write to the connection.
func TestQueueBatches(t *testing.T) {
	p, ws, conn := queuedPeer(t, 8)
	enqueue(t, p, "a", "b", "c")
	if got := conn.written(); len(got) != 0 {
		t.Fatalf("written before the writer started: %q", got)
	}
	p.startWriter()
	waitWritten(t, ws, 3)
	if got := ws.written(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("messages %q, want a, b, c", got)
	}
	p.end()
	if got := conn.written(); !slices.Equal(got, []string{"abc"}) {
		t.Errorf("connection writes %q, want one write of abc", got)
	}
}

// TestQueueFull: a full queue refuses without waiting, and a Pair counts
// as one entry.
func TestQueueFull(t *testing.T) {
	p, ws, _ := queuedPeer(t, 2)
	pair := Pair(NewOutgoing([]byte("copy")), NewOutgoing([]byte("result")))
	if err := p.Enqueue(pair); err != nil {
		t.Fatal(err)
	}
	enqueue(t, p, "next")
	if err := p.Enqueue(NewOutgoing([]byte("over"))); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a third entry in a queue of 2: %v, want ErrQueueFull", err)
	}
	p.startWriter()
	waitWritten(t, ws, 3)
	if got := ws.written(); !slices.Equal(got, []string{"copy", "result", "next"}) {
		t.Errorf("messages %q", got)
	}
}

// TestQueueClosing: nothing is queued once Close was called, nor on a
// connection without a queue; Close sends its code once.
func TestQueueClosing(t *testing.T) {
	p, ws, _ := queuedPeer(t, 4)
	p.Close(ClosePolicyViolation)
	p.Close(CloseGoingAway) // a second Close does nothing
	if err := p.Enqueue(NewOutgoing([]byte("late"))); !errors.Is(err, ErrClosing) {
		t.Errorf("after Close: %v, want ErrClosing", err)
	}
	p.t.closers.Wait()
	if got := ws.closes(); !slices.Equal(got, []int{ClosePolicyViolation}) {
		t.Errorf("close codes %v, want [1008]", got)
	}

	unqueued, _, _ := queuedPeer(t, 0)
	if err := unqueued.Enqueue(NewOutgoing([]byte("x"))); !errors.Is(err, ErrClosing) {
		t.Errorf("without a queue: %v, want ErrClosing", err)
	}
}

// TestQueueCloseAfter: closeAfterQueue closes once what was queued before
// it is written; what comes after is not written.
func TestQueueCloseAfter(t *testing.T) {
	p, ws, _ := queuedPeer(t, 4)
	enqueue(t, p, "a", "b")
	p.closeAfterQueue(1011)
	enqueue(t, p, "after the close")
	p.startWriter()
	p.writer.Wait() // the writer stops at the close
	p.t.closers.Wait()
	if got := ws.written(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("messages %q, want a, b", got)
	}
	if got := ws.closes(); !slices.Equal(got, []int{1011}) {
		t.Errorf("close codes %v, want [1011]", got)
	}
}

// TestQueueCloseAfterAtOnce: with no queue, or a full one (a client that
// does not read), closeAfterQueue closes at once.
func TestQueueCloseAfterAtOnce(t *testing.T) {
	for _, n := range []int{0, 1} {
		p, ws, _ := queuedPeer(t, n)
		if n > 0 {
			enqueue(t, p, "fills the queue")
		}
		p.closeAfterQueue(1011)
		if err := p.Enqueue(NewOutgoing([]byte("x"))); !errors.Is(err, ErrClosing) {
			t.Errorf("queue %d: Enqueue after the close: %v", n, err)
		}
		p.t.closers.Wait()
		if got := ws.closes(); !slices.Equal(got, []int{1011}) {
			t.Errorf("queue %d: close codes %v, want [1011]", n, got)
		}
	}
}

// TestQueueStopsAtFailedWrite: the writer stops at the first failed write.
func TestQueueStopsAtFailedWrite(t *testing.T) {
	p, ws, _ := queuedPeer(t, 4)
	ws.failAt = 2
	enqueue(t, p, "a", "b", "c")
	p.startWriter()
	p.writer.Wait()
	if got := ws.written(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("messages %q, want only a", got)
	}
}

// TestQueueEndStopsWriter: end stops a writer that waits on an empty queue.
func TestQueueEndStopsWriter(t *testing.T) {
	p, _, _ := queuedPeer(t, 4)
	p.startWriter()
	ended := make(chan struct{})
	go func() { p.end(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("end did not return: the writer did not stop")
	}
}

// TestReply: without a queue the reader writes at once; with one, Reply
// copies the message into the queue (data is valid only during Message).
func TestReply(t *testing.T) {
	p, ws, _ := queuedPeer(t, 0)
	p.Reply(Text, []byte("direct"))
	if got := ws.written(); !slices.Equal(got, []string{"direct"}) {
		t.Errorf("without a queue: %q", got)
	}

	p, ws, _ = queuedPeer(t, 4)
	data := []byte("original")
	p.Reply(Text, data)
	copy(data, "CHANGED!")
	if got := ws.written(); len(got) != 0 {
		t.Errorf("with a queue, written before the writer started: %q", got)
	}
	p.startWriter()
	waitWritten(t, ws, 1)
	if got := ws.written(); !slices.Equal(got, []string{"original"}) {
		t.Errorf("with a queue: %q, want the message as it was", got)
	}
}

// TestHeldWrites: a connection's writes held by the reader go out in one
// write at flush, or at once past heldLimit; without a hold they go out
// as they come.
func TestHeldWrites(t *testing.T) {
	conn := newRecordConn()
	c := &trackedConn{Conn: conn, coalesce: true}
	_, _ = c.Write([]byte("unheld"))
	c.holdWrites()
	_, _ = c.Write([]byte("one,"))
	_, _ = c.Write([]byte("two"))
	if got := conn.written(); !slices.Equal(got, []string{"unheld"}) {
		t.Fatalf("held writes went out: %q", got)
	}
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	if got := conn.written(); !slices.Equal(got, []string{"unheld", "one,two"}) {
		t.Fatalf("after flush: %q", got)
	}
	_, _ = c.Write([]byte("after"))
	if got := conn.written(); len(got) != 3 || got[2] != "after" {
		t.Fatalf("after the hold ended: %q", got)
	}

	c.holdWrites()
	big := bytes.Repeat([]byte("x"), heldLimit)
	_, _ = c.Write(big)
	if got := conn.written(); len(got) != 4 || len(got[3]) != heldLimit {
		t.Errorf("past heldLimit the held writes did not go out at once")
	}

	// A connection without coalesce (a queue's) is never held by the reader.
	conn = newRecordConn()
	q := &trackedConn{Conn: conn}
	q.holdWrites()
	_, _ = q.Write([]byte("x"))
	if got := conn.written(); !slices.Equal(got, []string{"x"}) {
		t.Errorf("a queued connection's reply was held: %q", got)
	}
}

// TestHoldOpening: the 101 and what follows it wait until the session is
// open, then go out together.
func TestHoldOpening(t *testing.T) {
	conn := newRecordConn()
	c := &trackedConn{Conn: conn, coalesce: true}
	c.holdOpening()
	_, _ = c.Write([]byte("HTTP/1.1 101\r\n\r\n"))
	_, _ = c.Write([]byte("queued by Open"))
	if got := conn.written(); len(got) != 0 {
		t.Fatalf("written before the session was open: %q", got)
	}
	if err := c.openDone(); err != nil {
		t.Fatal(err)
	}
	if got := conn.written(); !slices.Equal(got, []string{"HTTP/1.1 101\r\n\r\nqueued by Open"}) {
		t.Errorf("after openDone: %q", got)
	}
}

package wsserver

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// LoopUpgrader is what the http.ResponseWriter given to Options.Front
// does beyond an http.ResponseWriter's part: the upgrade.
type LoopUpgrader interface {
	// UpgradeOnLoop checks the request as every upgrade is checked
	// (upgrade.go) and, when it passes, opens the connection with open
	// (on its loop, before the 101 is written) and writes the 101. false:
	// refused; the refusal is the answer.
	UpgradeOnLoop(open func(LoopPeer) Session) bool
}

// LoopPeer is a gnet connection's Peer, for an application that frames
// its own messages and writes them from any goroutine (Options.Front).
type LoopPeer interface {
	Peer
	// WriteFrames hands whole server frames to the connection's loop, in
	// order, without waiting. ErrQueueFull: maxFrameEntries writes, or
	// the target's backlog of bytes, wait for a client that does not
	// read; ErrClosing once the close has begun. Nothing is sent then.
	WriteFrames(frames []byte) error
	// CloseAfterQueue starts the server's close once what WriteFrames
	// handed over is written. Code 0 ends the connection as Node's
	// engine.io does: a close frame without a status code, then FIN at
	// once, without waiting for the client's answer.
	CloseAfterQueue(code int)
	// Execute runs f on the connection's loop, unless it has closed.
	Execute(f func())
	// Loop is the connection's event loop, for work that is the loop's
	// rather than one connection's (the timers of its sessions).
	Loop() Loop
	// Reason is the disconnect reason (a close code, ping_timeout,
	// 1006); good in Session.Closed.
	Reason() string
	// Unwritten is what the connection holds for its client: the writes
	// handed over that its loop has not written yet, and the bytes gnet
	// holds unsent (as the loop last read them: each call that finds
	// some has the loop read them again).
	Unwritten() (writes int, bytes int64)
}

// unserved counts, with Options.Front, a request that ended before
// Front saw it: cut short by -handshake-timeout, abandoned, or malformed.
func (g *gnetTarget) unserved(timedOut bool) {
	if g.opts.Unserved != nil {
		g.opts.Unserved(timedOut)
	}
}

// maxFrameEntries bounds the writes WriteFrames holds for one connection.
const maxFrameEntries = 4096

// WriteFrames: see LoopPeer.
func (st *gconn) WriteFrames(frames []byte) error {
	sq := st.outQueue()
	sq.mu.Lock()
	switch {
	case st.shut.Load():
		sq.mu.Unlock()
		return ErrClosing
	case sq.entries >= maxFrameEntries || sq.outbound.Load() > int64(st.loop.g.backlog):
		sq.mu.Unlock()
		return ErrQueueFull
	}
	sq.entries++
	sq.frames = append(sq.frames, frames)
	schedule := !sq.flushing
	sq.flushing = true
	sq.mu.Unlock()
	if schedule && st.loop.flusher.add(st) != nil {
		return ErrClosing // the engine is shutting down
	}
	return nil
}

// CloseAfterQueue: see LoopPeer.
func (st *gconn) CloseAfterQueue(code int) { st.close(code, true) }

// Execute: see LoopPeer.
func (st *gconn) Execute(f func()) { st.loop.g.onLoop(st, func(*gconn) { f() }) }

// Loop: see LoopPeer.
func (st *gconn) Loop() Loop { return st.loop }

// Reason: see LoopPeer.
func (st *gconn) Reason() string { return st.disconnectReason() }

// Unwritten: see LoopPeer. The bytes are read on the loop when it
// flushes; a call that finds some asks the loop to read them again, so
// that the next call sees what a client has read since, even if nothing
// was handed over meanwhile (a writer that waits for the client to read
// before it writes more).
func (st *gconn) Unwritten() (writes int, bytes int64) {
	sq := st.queue.Load()
	if sq == nil {
		return 0, 0
	}
	sq.mu.Lock()
	writes = sq.entries
	sq.mu.Unlock()
	if bytes = sq.outbound.Load(); bytes > 0 {
		st.loop.g.onLoop(st, func(st *gconn) { sq.outbound.Store(int64(st.conn.OutboundBuffered())) })
	}
	return writes, bytes
}

// front reads a whole request head and serves it with Options.Front,
// which either upgrades it (UpgradeOnLoop) or answers it; an answer ends
// the connection, as a refusal does. The request goes through
// http.ReadRequest: Front gets a real *http.Request.
func (g *gnetTarget) front(c gnet.Conn, st *gconn, head []byte, n int) (gnet.Action, bool) {
	rr := requestReaders.Get().(*requestReader)
	defer rr.put()
	rr.src.Reset(head)
	rr.buf.Reset(&rr.src)
	r, err := http.ReadRequest(rr.buf)
	if err == nil && r.ProtoAtLeast(1, 1) && r.Host == "" {
		err = fmt.Errorf("missing required Host header")
	}
	if err != nil {
		return g.refuse(c, st, malformed(err.Error())), false
	}
	r.RemoteAddr = c.RemoteAddr().String()
	w := &frontWriter{g: g, c: c, st: st, req: r, n: n, header: http.Header{}}
	g.opts.Front.ServeHTTP(w, r)
	switch {
	case w.upgraded:
		return w.action, w.ok
	case w.refusal != nil:
		st.counted = true // Front counts what it refuses
		return g.answer(c, st, w.refusal.bytes()), false
	}
	st.counted = true // Front counts what it answers
	return g.answer(c, st, w.response()), false
}

// frontWriter is the http.ResponseWriter of a request served by Front on
// a loop: the answer is gathered, then written in one piece.
type frontWriter struct {
	g      *gnetTarget
	c      gnet.Conn
	st     *gconn
	req    *http.Request
	n      int
	header http.Header
	status int
	body   bytes.Buffer

	upgraded bool
	action   gnet.Action
	ok       bool
	refusal  *refusal
}

func (w *frontWriter) Header() http.Header { return w.header }

func (w *frontWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// Write gathers the body; Front's answers are small (a JSON error, a
// plain-text refusal), and maxAnswerBytes bounds what is kept.
func (w *frontWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.body.Len()+len(b) > maxAnswerBytes {
		return 0, fmt.Errorf("answer over %d bytes", maxAnswerBytes)
	}
	return w.body.Write(b)
}

// UpgradeOnLoop: see LoopUpgrader.
func (w *frontWriter) UpgradeOnLoop(open func(LoopPeer) Session) bool {
	g, st := w.g, w.st
	if rf := admitHead(g.listening.Closing(), (*httpHead)(w.req), g.cfg, g.gate, g.faults); rf != nil {
		w.refusal = rf
		return false
	}
	st.held = true
	w.upgraded = true
	w.action, w.ok = g.upgrade(w.c, st, (*httpHead)(w.req), w.n, func(p Peer) Session { return open(p.(*gconn)) })
	return w.ok
}

// response is the answer as net/http would write it, with
// Connection: close.
func (w *frontWriter) response() []byte {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	h := w.header
	if h.Get("Content-Type") == "" && w.body.Len() > 0 {
		h.Set("Content-Type", http.DetectContentType(w.body.Bytes()))
	}
	if status != http.StatusNoContent && status != http.StatusNotModified {
		h.Set("Content-Length", strconv.Itoa(w.body.Len()))
	}
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	_ = h.Write(&b)
	b.WriteString("\r\n")
	if w.req.Method != http.MethodHead {
		b.Write(w.body.Bytes())
	}
	return b.Bytes()
}

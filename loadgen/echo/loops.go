package echo

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/loadgen/internal/tally"
)

// loops runs pipelined mode on gnet's event loops (epoll; -loops of them,
// by default half the cores: the target on the same machine gets the
// rest) instead of a sender and a receiver goroutine per connection: each
// connection's echoes are read, checked and timed where the loop reads
// them, and the messages that replace them are written at once, in one
// write. Against the goroutines that takes the wake-ups, the channel and
// queue operations and the second read (the one that finds the socket
// empty) off every batch: at 100 connections the client used 1.5 times
// the CPU of echo-gnet, the target it measured, and this way it uses no
// more. Sync and rate modes, and TLS, stay on goroutines.
//
// An echo is timed when the read that brought its last byte returned (one
// clock read per read, shared by the echoes it brought), and a message
// when the write of its batch began, as on the goroutines.
type loops struct {
	gnet.BuiltinEventEngine
	cli     *gnet.Client
	drained sync.WaitGroup // one per connection: done once it ended
	closed  sync.WaitGroup // one per connection: done by OnClose
}

// pipeConn is one connection's state, in its gnet.Conn's context; touched
// only by its event loop until it is closed.
type pipeConn struct {
	w        *worker
	g        gnet.Conn
	ws       bool
	text     bool // ws: text messages, not binary
	win      window
	free     int // messages that may be sent now
	most     int // messages to a write, at most
	next     uint64
	expect   uint64    // the next echo's sequence number
	batches  []sentMsg // sent and not all echoed, oldest first
	msg      []byte    // one message, filled per sequence number
	out      []byte    // the frames of a batch
	ended    bool
	discards int64 // bytes of the current data frame still to come
	fin      bool  // the current data frame ends its message
	op       ws.OpCode
	n        int    // the current message's length so far
	partial  []byte // the current message (up to its size) when it spans reads or frames
}

// loopConnOf returns c's socket, when its messages can be read on the
// loops: a bare TCP connection (not TLS) with nothing read ahead.
func loopConnOf(c msgConn) (net.Conn, bool) {
	var nc net.Conn
	var r *bufio.Reader
	switch c := c.(type) {
	case *wsConn:
		nc, r = c.c, c.r
	case *tcpConn:
		nc, r = c.c, c.r
	default:
		return nil, false
	}
	_, tcp := nc.(*net.TCPConn)
	return nc, tcp && r.Buffered() == 0
}

// startLoops enrolls every connection in the loops and starts its traffic;
// false (nothing started) when a connection cannot be read there.
func (r *run) startLoops(win window, workers []*worker, inflight int) (*loops, bool) {
	socks := make([]net.Conn, len(workers))
	for i, w := range workers {
		c, ok := loopConnOf(w.conn)
		if !ok {
			return nil, false
		}
		socks[i] = c
	}
	l := &loops{}
	n := r.cfg.Loops
	if n == 0 {
		n = max(1, runtime.GOMAXPROCS(0)/2)
	}
	cli, err := gnet.NewClient(l, gnet.WithMulticore(true), gnet.WithNumEventLoop(n),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay), gnet.WithLogger(tally.GnetLog{Errs: r.errs}))
	if err == nil {
		err = cli.Start()
	}
	if err != nil {
		fmt.Fprintf(r.notes, "loadgen: gnet client: %v; pipelining on goroutines\n", err)
		return nil, false
	}
	l.cli = cli
	for i, w := range workers {
		_, isWS := w.conn.(*wsConn)
		size := len(w.pl.pattern)
		p := &pipeConn{w: w, ws: isWS, text: r.cfg.Text, win: win, free: inflight, most: min(inflight, max(1, batchBytes/size)),
			msg: make([]byte, size)}
		l.drained.Add(1)
		l.closed.Add(1)
		// Enroll hands a duplicate of the socket to a loop and closes
		// the original; the traffic starts in OnOpen.
		g, err := cli.EnrollContext(socks[i], p)
		if err == nil && p.g == nil { // not opened (the loop could not poll it): no OnOpen, no OnClose
			_ = g.Close()
			err = errors.New("not opened on the event loop")
		}
		if err != nil {
			w.fail(kindRead, fmt.Errorf("gnet enroll: %w", err))
			l.drained.Done()
			l.closed.Done()
			continue
		}
		w.conn = loopConn{g: g, ws: isWS}
		r.conns[i] = w.conn
	}
	return l, true
}

// wait waits for every connection to end.
func (l *loops) wait() { l.drained.Wait() }

// stop closes what is still open, waits for each OnClose, and stops the
// loops.
func (l *loops) stop() {
	done := make(chan struct{})
	go func() { l.closed.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second): // the close frames not written: Stop closes the rest
	}
	_ = l.cli.Stop()
	<-done
}

// loopConn is the msgConn of a connection on the loops: only close is
// called on it, from outside the loops.
type loopConn struct {
	g  gnet.Conn
	ws bool
}

func (loopConn) queue([]byte)             { panic("echo: queue on a connection of the event loops") }
func (loopConn) flush() error             { panic("echo: flush on a connection of the event loops") }
func (loopConn) recv([]byte) (int, error) { panic("echo: recv on a connection of the event loops") }

// close writes the close frame (1000) and closes, on the connection's loop.
func (c loopConn) close() {
	if !c.ws {
		_ = c.g.Close()
		return
	}
	frame := ws.MustCompileFrame(ws.MaskFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))))
	if err := c.g.AsyncWrite(frame, func(g gnet.Conn, _ error) error { return g.Close() }); err != nil {
		_ = c.g.Close()
	}
}

func (l *loops) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	p := c.Context().(*pipeConn)
	p.g = c
	if err := p.send(); err != nil {
		p.end(l, kindWrite, err)
		return nil, gnet.Close
	}
	if stopped(p.win.stop) && p.expect == p.next { // opened after the window
		p.end(l, "", nil)
	}
	return nil, gnet.None
}

func (l *loops) OnTraffic(c gnet.Conn) gnet.Action {
	p := c.Context().(*pipeConn)
	now := time.Now()
	buf, _ := c.Peek(-1)
	used, err := p.parse(buf, now)
	if used > 0 { // Discard(0) would drop everything
		_, _ = c.Discard(used)
	}
	if err != nil {
		p.end(l, kindRead, err)
		return gnet.Close
	}
	if p.ended {
		return gnet.None
	}
	if err := p.send(); err != nil {
		p.end(l, kindWrite, err)
		return gnet.Close
	}
	if stopped(p.win.stop) && p.expect == p.next {
		p.end(l, "", nil)
	}
	return gnet.None
}

func (l *loops) OnClose(c gnet.Conn, err error) gnet.Action {
	p := c.Context().(*pipeConn)
	if err == nil {
		err = io.EOF
	}
	p.end(l, kindRead, err)
	l.closed.Done()
	return gnet.None
}

// end ends the connection's traffic once: drained, or failed with err of
// kind.
func (p *pipeConn) end(l *loops, kind string, err error) {
	if p.ended {
		return
	}
	p.ended = true
	if err != nil {
		p.w.fail(kind, err)
	}
	l.drained.Done()
}

// send writes as many messages as may be in flight, most to a write,
// unless the window has ended.
func (p *pipeConn) send() error {
	for p.free > 0 && !stopped(p.win.stop) {
		n := min(p.free, p.most)
		t := time.Now()
		p.out = p.out[:0]
		for i := range uint64(n) {
			p.w.pl.fill(p.msg, p.next+i)
			if p.ws {
				p.out = appendClientFrame(p.out, dataOp(p.text), p.msg)
			} else {
				p.out = append(p.out, p.msg...)
			}
		}
		if _, err := p.g.Write(p.out); err != nil { // gnet keeps what the socket did not take
			return err
		}
		p.w.sent += int64(n)
		p.batches = append(p.batches, sentMsg{seq: p.next, n: n, at: t})
		p.next += uint64(n)
		p.free -= n
	}
	return nil
}

// appendClientFrame appends p as one masked frame of opcode op (RFC 6455
// 5.2, 5.3), with a fresh random mask.
func appendClientFrame(out []byte, op ws.OpCode, p []byte) []byte {
	n := len(p)
	switch {
	case n < 126:
		out = append(out, 0x80|byte(op), 0x80|byte(n))
	case n <= 0xffff:
		out = append(out, 0x80|byte(op), 0x80|126, byte(n>>8), byte(n))
	default:
		out = append(out, 0x80|byte(op), 0x80|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	mask := ws.NewMask()
	out = append(out, mask[:]...)
	start := len(out)
	out = append(out, p...)
	ws.Cipher(out[start:], mask, 0)
	return out
}

// parse takes every echo whole in buf (the data frames' payloads as they
// come), read at now, and returns how many bytes it used; the rest waits
// for more. An error ends the connection.
func (p *pipeConn) parse(buf []byte, now time.Time) (int, error) {
	if !p.ws {
		size := len(p.msg)
		used := 0
		for ; len(buf)-used >= size; used += size {
			p.echoed(buf[used:used+size], size, nil, now)
		}
		return used, nil
	}
	used := 0
	for used < len(buf) {
		if p.discards > 0 { // the payload of a data frame that spans reads
			k := int(min(p.discards, int64(len(buf)-used)))
			p.keep(buf[used : used+k])
			used += k
			if p.discards -= int64(k); p.discards == 0 && p.fin {
				p.complete(now)
			}
			continue
		}
		h, hlen, err := readHeader(buf[used:])
		if err != nil {
			return used, err
		}
		if hlen == 0 {
			return used, nil // the rest of the header is on its way
		}
		if h.OpCode.IsControl() {
			if h.Length > 125 {
				return used, fmt.Errorf("websocket: a control frame of %d bytes", h.Length)
			}
			if int64(len(buf)-used-hlen) < h.Length {
				return used, nil // the rest of the frame is on its way
			}
			if err := p.control(h.OpCode, buf[used+hlen:used+hlen+int(h.Length)]); err != nil {
				return used, err
			}
			used += hlen + int(h.Length)
			continue
		}
		if (p.op == 0) != (h.OpCode != ws.OpContinuation) { // first frame, or the next fragment
			return used, fmt.Errorf("websocket: unexpected %s frame", opName(h.OpCode))
		}
		used += hlen
		if p.op == 0 && h.Fin && int64(len(buf)-used) >= h.Length { // a whole message, the usual case
			payload := buf[used : used+int(h.Length)]
			used += int(h.Length)
			p.echoed(payload, len(payload), opErr(h.OpCode, dataOp(p.text)), now)
			continue
		}
		if p.op == 0 {
			p.op = h.OpCode
		}
		p.fin, p.discards = h.Fin, h.Length
		if h.Length == 0 && h.Fin {
			p.complete(now)
		}
	}
	return used, nil
}

// keep adds b to the current message, keeping up to its size.
func (p *pipeConn) keep(b []byte) {
	if room := len(p.msg) - len(p.partial); room > 0 {
		p.partial = append(p.partial, b[:min(room, len(b))]...)
	}
	p.n += len(b)
}

// complete takes the message that spanned reads or frames.
func (p *pipeConn) complete(now time.Time) {
	p.echoed(p.partial, p.n, opErr(p.op, dataOp(p.text)), now)
	p.partial, p.n, p.op = p.partial[:0], 0, 0
}

// echoed takes one echo of n bytes (got holds the first of them), read at
// now, for the oldest message awaiting its echo.
func (p *pipeConn) echoed(got []byte, n int, err error, now time.Time) {
	if p.expect == p.next {
		p.w.received++
		p.w.errs.Add(kindMismatch, 1, fmt.Errorf("connection %d: %w: an echo with no message awaiting it", p.w.id, errMismatch))
		p.w.tl.Error(now)
		return
	}
	b := &p.batches[0]
	p.w.echoed(got, n, err, p.expect, b.at, p.win, now)
	p.expect++
	p.free++
	if p.expect == b.seq+uint64(b.n) {
		p.batches = append(p.batches[:0], p.batches[1:]...)
	}
}

// control answers a ping with its pong; a close ends the connection with
// the target's code.
func (p *pipeConn) control(op ws.OpCode, b []byte) error { return answerControl(p.g, op, b) }

// readHeader reads a frame header from the target at the start of b:
// hlen 0 when b does not hold all of it. A masked or extended frame is an
// error (RFC 6455 5.1, 5.2).
func readHeader(b []byte) (h ws.Header, hlen int, err error) {
	if len(b) < 2 {
		return h, 0, nil
	}
	h.Fin = b[0]&0x80 != 0
	h.Rsv = (b[0] >> 4) & 0x7
	h.OpCode = ws.OpCode(b[0] & 0xf)
	h.Masked = b[1]&0x80 != 0
	if h.Masked || h.Rsv != 0 {
		return h, 0, fmt.Errorf("websocket: a masked or extended frame from the target (header %+v)", h)
	}
	switch l := b[1] & 0x7f; l {
	case 126:
		if len(b) < 4 {
			return h, 0, nil
		}
		h.Length = int64(binary.BigEndian.Uint16(b[2:]))
		return h, 4, nil
	case 127:
		if len(b) < 10 {
			return h, 0, nil
		}
		u := binary.BigEndian.Uint64(b[2:])
		if u > 1<<63-1 {
			return h, 0, errors.New("websocket: a frame length with its top bit set")
		}
		h.Length = int64(u)
		return h, 10, nil
	default:
		h.Length = int64(l)
		return h, 2, nil
	}
}

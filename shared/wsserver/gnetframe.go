package wsserver

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsflate"
	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// directWrite is the payload size from which a reply is written with its
// own writev instead of being copied into the batch of replies.
const directWrite = 16 << 10

// frames parses every complete frame that has arrived and answers it. The
// replies of one call go out in one write: a pipelining client gets one
// syscall per read, not one per message.
func (g *gnetTarget) frames(c gnet.Conn, st *gconn) gnet.Action {
	if st.lingering {
		_, _ = c.Discard(-1)
		return gnet.None
	}
	if st.skip > 0 {
		n := int(min(st.skip, int64(c.InboundBuffered())))
		if n > 0 {
			_, _ = c.Discard(n) // never 0: Discard(0) drops everything
			st.skip -= int64(n)
		}
		if st.skip > 0 || c.InboundBuffered() == 0 {
			return gnet.None
		}
	}
	if c.InboundBuffered() < st.need {
		// Part of a large frame: peeking would copy it again every time.
		return gnet.None
	}
	buf, err := c.Peek(-1)
	if err != nil || len(buf) == 0 {
		return gnet.None
	}
	out := getBuffer()
	defer putBuffer(out)
	st.out = out
	defer g.flushCounts(st)
	action, used := g.parse(c, st, buf, out)
	st.out = nil
	if len(*out) > 0 && st.phase != phaseClosed {
		_, _ = c.Write(*out)
	}
	if st.phase == phaseClosed {
		return gnet.None
	}
	if st.lingering {
		// The close frame is out (unless the client does not read: then
		// the close wait ends it): FIN, as Node's ws ends the socket.
		if c.OutboundBuffered() == 0 {
			_ = unix.Shutdown(c.Fd(), unix.SHUT_WR)
		}
		_, _ = c.Discard(-1)
		return gnet.None
	}
	if used > 0 {
		_, _ = c.Discard(used)
	}
	return action
}

// parse handles the frames in buf and returns how many bytes it used.
// Replies are appended to out.
func (g *gnetTarget) parse(c gnet.Conn, st *gconn, buf []byte, out *[]byte) (gnet.Action, int) {
	used := 0
	for used < len(buf) && st.phase != phaseClosed {
		if st.phase == phaseOpen && c.OutboundBuffered()+len(*out) > g.backlog {
			// The client does not read its replies. gorilla and coder
			// would stop reading from it; gnet cannot, so rather than
			// buffer without end the server closes.
			g.fail(st, out, ws.StatusPolicyViolation)
		}
		h, hlen, err := parseHeader(buf[used:])
		if err == nil && hlen == 0 {
			st.need = len(buf) - used + 1
			return gnet.None, used
		}
		if err != nil || st.phase == phaseClosing && !h.Masked {
			// No length to skip by: the framing is lost.
			return g.failLost(st, out, ws.StatusProtocolError), len(buf)
		}
		st.need = 0
		avail := int64(len(buf) - used - hlen)

		if st.phase == phaseClosing {
			// Waiting for the client's close frame: drop everything else.
			if h.OpCode == ws.OpClose {
				return gnet.Close, len(buf)
			}
			if h.Length > avail {
				st.skip = h.Length - avail
				return gnet.None, len(buf)
			}
			used += hlen + int(h.Length)
			continue
		}

		if code := st.check(h, g.cfg.MaxMessage); code != 0 {
			if h.OpCode == ws.OpClose {
				// The client's close, bad as it is: it sends nothing
				// after it, so there is no answer to wait for.
				return g.failLost(st, out, code), len(buf)
			}
			g.fail(st, out, code)
			// The header parsed, so the framing holds: skip this frame and
			// look for the client's close frame.
			if h.Length > avail {
				st.skip = h.Length - avail
				return gnet.None, len(buf)
			}
			used += hlen + int(h.Length)
			continue
		}
		if h.Length > avail {
			st.need = hlen + int(h.Length)
			return gnet.None, used
		}
		payload := buf[used+hlen : used+hlen+int(h.Length)]
		ws.Cipher(payload, h.Mask, 0)
		used += hlen + len(payload)
		if action := g.frame(c, st, h, payload, out); action != gnet.None || st.phase != phaseOpen {
			if st.phase == phaseClosing && action == gnet.None {
				continue // the server closed: look for the client's answer
			}
			return action, used
		}
	}
	return gnet.None, used
}

// check returns the close code that a frame header calls for, 0 if none.
func (st *gconn) check(h ws.Header, max int64) ws.StatusCode {
	m := inMessage{op: ws.OpCode(st.op), compressed: st.compressed}
	if st.msg != nil {
		m.held = int64(len(*st.msg))
	}
	return ws.StatusCode(headerCode(h, m, st.deflate, max))
}

// frame handles one complete, unmasked frame.
func (g *gnetTarget) frame(c gnet.Conn, st *gconn, h ws.Header, payload []byte, out *[]byte) gnet.Action {
	switch h.OpCode {
	case ws.OpPing:
		*out = appendFrame(*out, 0, ws.OpPong, payload)
	case ws.OpPong:
	case ws.OpClose:
		return g.closeFrame(st, payload, out)
	case ws.OpText, ws.OpBinary:
		if h.Fin {
			g.message(st, byte(h.OpCode), h.Rsv1(), payload, out)
			return gnet.None
		}
		st.op, st.compressed = byte(h.OpCode), h.Rsv1()
		st.msg = getBuffer()
		*st.msg = append(*st.msg, payload...)
	case ws.OpContinuation:
		*st.msg = append(*st.msg, payload...)
		if h.Fin {
			op, compressed := st.op, st.compressed
			g.message(st, op, compressed, *st.msg, out)
			st.dropMessage()
		}
	}
	return gnet.None
}

func (st *gconn) dropMessage() {
	if st.msg != nil {
		putBuffer(st.msg)
		st.msg = nil
	}
	st.op = 0
}

// message checks one whole message and hands it to the session.
func (g *gnetTarget) message(st *gconn, op byte, compressed bool, data []byte, out *[]byte) {
	if compressed {
		in := inflaters.Get().(*inflater)
		defer inflaters.Put(in)
		plain := getBuffer()
		defer putBuffer(plain)
		switch err := in.inflate(data, plain, g.cfg.MaxMessage); {
		case errors.Is(err, errTooBig):
			g.fail(st, out, ws.StatusMessageTooBig)
			return
		case err != nil:
			// Corrupt deflate data: a protocol error, as gorilla and coder
			// have it.
			g.fail(st, out, ws.StatusProtocolError)
			return
		}
		data = *plain
	}
	if ws.OpCode(op) == ws.OpText && !utf8.Valid(data) {
		g.fail(st, out, ws.StatusInvalidFramePayloadData)
		return
	}
	st.rx.add(len(data))
	st.session.Message(Op(op), data)
}

// Reply adds a message to the replies of this OnTraffic call, which go out
// in one write. A queued connection sends it through Enqueue instead.
func (st *gconn) Reply(op Op, data []byte) {
	if st.g.opts.Queue > 0 || st.out == nil {
		_ = st.Enqueue(NewOutgoing(append([]byte(nil), data...)))
		return
	}
	if st.phase != phaseOpen {
		return
	}
	n := len(data)
	var rsv byte
	if st.deflate {
		d := deflaters.Get().(*deflater)
		defer deflaters.Put(d)
		if err := d.deflate(data); err != nil {
			st.g.fail(st, st.out, ws.StatusInternalServerError)
			return
		}
		data, rsv = d.buf.Bytes(), ws.Rsv(true, false, false)
	}
	if len(data) < directWrite {
		*st.out = appendFrame(*st.out, rsv, ws.OpCode(op), data)
	} else {
		c := st.conn
		if len(*st.out) > 0 {
			_, _ = c.Write(*st.out)
			*st.out = (*st.out)[:0]
			if st.phase == phaseClosed {
				return
			}
		}
		sc := scratches.Get().(*frameScratch)
		sc.iov[0] = appendHeader(sc.hdr[:0], rsv, ws.OpCode(op), len(data))
		sc.iov[1] = data
		_, _ = c.Writev(sc.iov[:])
		sc.iov = [2][]byte{}
		scratches.Put(sc)
		if st.phase == phaseClosed {
			return
		}
	}
	st.tx.add(n)
}

// Enqueue puts a message on the connection's send queue, which its loop
// (the one writer) empties. The queue is the connection's own, not gnet's
// task queue: gnet runs Execute's tasks out of order when many are waiting.
// gnet's outbound buffer, which grows without end for a client that does
// not read, counts against the bound too, in messages of this size.
func (st *gconn) Enqueue(o *Outgoing) error {
	sq := st.queue
	if sq == nil {
		return ErrClosing // not a queued target
	}
	q := st.g.opts.Queue
	frame := o.frameFor(st.deflate)
	var then []byte
	if o.then != nil {
		then = o.then.frameFor(st.deflate)
	}
	sq.mu.Lock()
	switch {
	case st.shut.Load():
		sq.mu.Unlock()
		return ErrClosing
	case sq.entries >= q || st.outbound.Load() > int64(q)*int64(len(frame)+len(then)):
		sq.mu.Unlock()
		return ErrQueueFull
	}
	sq.entries++
	sq.frames = append(sq.frames, frame)
	sq.bytes += len(o.Data)
	if then != nil {
		sq.frames = append(sq.frames, then)
		sq.bytes += len(o.then.Data)
	}
	schedule := !sq.flushing
	sq.flushing = true
	sq.mu.Unlock()
	if !schedule {
		return nil
	}
	err := st.conn.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		st.flush()
		return nil
	}))
	if err != nil {
		return ErrClosing // the engine is shutting down
	}
	return nil
}

// maxIovec is Linux's IOV_MAX: writev refuses more buffers at once (and
// gnet would close the connection over it).
const maxIovec = 1024

// flush writes everything queued, in order, on the loop: one writev per
// 1,024 messages.
func (st *gconn) flush() {
	sq := st.queue
	if sq == nil {
		return
	}
	sq.mu.Lock()
	frames, n, bytes := sq.frames, len(sq.frames), sq.bytes
	sq.frames, sq.spare = sq.spare[:0], frames
	sq.bytes, sq.entries = 0, 0
	sq.flushing = false
	sq.mu.Unlock()
	defer clear(frames) // the frames belong to their Outgoing, not to us
	if st.phase != phaseOpen {
		return // closing or closed: nothing may follow the close frame
	}
	for rest := frames; len(rest) > 0; {
		k := min(len(rest), maxIovec)
		if _, _ = st.conn.Writev(rest[:k]); st.phase == phaseClosed {
			return
		}
		rest = rest[k:]
	}
	st.g.m.Sent(n, bytes)
	st.outbound.Store(int64(st.conn.OutboundBuffered()))
}

// frameFor is o as one unmasked text frame, compressed or not; made once
// for every connection o goes to.
func (o *Outgoing) frameFor(deflate bool) []byte {
	if !deflate {
		o.frameOnce.Do(func() { o.frame = appendFrame(nil, 0, ws.OpText, o.Data) })
		return o.frame
	}
	o.deflateOnce.Do(func() {
		d := deflaters.Get().(*deflater)
		defer deflaters.Put(d)
		if err := d.deflate(o.Data); err != nil {
			// flate writing to memory does not fail; if it did, the
			// message goes uncompressed, which is valid.
			o.deflated = appendFrame(nil, 0, ws.OpText, o.Data)
			return
		}
		o.deflated = appendFrame(nil, ws.Rsv(true, false, false), ws.OpText, d.buf.Bytes())
	})
	return o.deflated
}

// closeFrame answers the client's close frame with its code and reason
// (RFC 6455 5.5.1), as Node's ws does, or with the code closeFrameCode
// gives an invalid one, and closes the connection once the answer is
// written.
func (g *gnetTarget) closeFrame(st *gconn, payload []byte, out *[]byte) gnet.Action {
	code, fail := closeFrameCode(payload)
	st.phase = phaseClosing
	if fail != 0 {
		st.reason = codeReason(fail)
		*out = appendClose(*out, fail)
		return gnet.Close
	}
	st.reason = codeReason(code)
	*out = appendFrame(*out, 0, ws.OpClose, payload)
	return gnet.Close
}

// fail starts the server's close with code: the close frame goes out with
// the other replies, then the connection waits for the client's answer.
func (g *gnetTarget) fail(st *gconn, out *[]byte, code ws.StatusCode) gnet.Action {
	if st.phase != phaseOpen {
		return gnet.Close
	}
	*out = appendClose(*out, int(code))
	st.closing(g, int(code))
	return gnet.None
}

// closing records that the server sent its close frame with code.
func (st *gconn) closing(g *gnetTarget, code int) {
	st.shut.Store(true)
	st.sent = code
	st.reason = codeReason(code)
	st.phase = phaseClosing
	st.need = 0
	st.dropMessage()
	st.arm(g, closeWait)
}

// failLost is fail when the client's frames cannot be read on (its close
// frame was bad, or a length unusable): after the close frame the server
// sends FIN and drops what comes until the client closes or the close wait
// ends.
func (g *gnetTarget) failLost(st *gconn, out *[]byte, code ws.StatusCode) gnet.Action {
	if st.phase != phaseOpen {
		return gnet.Close
	}
	g.fail(st, out, code)
	st.lingering = true
	return gnet.None
}

func appendClose(b []byte, code int) []byte {
	b = appendHeader(b, 0, ws.OpClose, 2)
	return binary.BigEndian.AppendUint16(b, uint16(code))
}

func appendFrame(b []byte, rsv byte, op ws.OpCode, payload []byte) []byte {
	return append(appendHeader(b, rsv, op, len(payload)), payload...)
}

// appendHeader appends an unmasked, final frame header (RFC 6455 5.2); rsv
// is in gobwas/ws's ws.Header.Rsv form.
func appendHeader(b []byte, rsv byte, op ws.OpCode, n int) []byte {
	b0 := 0x80 | rsv<<4 | byte(op)
	switch {
	case n <= 125:
		return append(b, b0, byte(n))
	case n <= 0xffff:
		return append(b, b0, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, b0, 127), uint64(n))
	}
}

// inflater decompresses one message (no context takeover: each message
// stands alone). Pooled: a flate reader is large.
type inflater struct {
	src bytes.Reader
	r   *wsflate.Reader
}

var inflaters = sync.Pool{New: func() any {
	in := &inflater{}
	in.r = wsflate.NewReader(&in.src, func(r io.Reader) wsflate.Decompressor {
		return &resettableReader{flate.NewReader(r)}
	})
	return in
}}

// resettableReader lets wsflate.Reader reuse a flate reader instead of
// making a new one per message: flate's Reset takes a dictionary too.
type resettableReader struct{ io.ReadCloser }

func (r *resettableReader) Reset(src io.Reader) {
	_ = r.ReadCloser.(flate.Resetter).Reset(src, nil)
}

func (in *inflater) inflate(data []byte, plain *[]byte, max int64) error {
	in.src.Reset(data)
	in.r.Reset(&in.src)
	return readMessage(in.r, plain, max)
}

// deflater compresses one message into buf, without the final 4 bytes, as
// RFC 7692 7.2.1 wants.
type deflater struct {
	buf bytes.Buffer
	w   *wsflate.Writer
}

var deflaters = sync.Pool{New: func() any {
	d := &deflater{}
	d.w = wsflate.NewWriter(&d.buf, func(w io.Writer) wsflate.Compressor {
		f, _ := flate.NewWriter(w, flate.BestSpeed) // gorilla's and coder's level
		return f
	})
	return d
}}

func (d *deflater) deflate(p []byte) error {
	d.buf.Reset()
	d.w.Reset(&d.buf)
	if _, err := d.w.Write(p); err != nil {
		return err
	}
	return d.w.Flush()
}

// counts are a connection's messages and bytes not yet in the metrics.
// frames adds them in once per call rather than per message: on a
// pipelined connection a call echoes dozens, and four shared counters per
// message cost the loops several percent of their time.
type counts struct{ msgs, bytes int }

func (c *counts) add(n int) { c.msgs, c.bytes = c.msgs+1, c.bytes+n }

func (g *gnetTarget) flushCounts(st *gconn) {
	g.m.Received(st.rx.msgs, st.rx.bytes)
	g.m.Sent(st.tx.msgs, st.tx.bytes)
	st.rx, st.tx = counts{}, counts{}
}

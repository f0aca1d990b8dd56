package wsserver

import (
	"sync"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/shared/wsframe"
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
	if c.InboundBuffered() < int(st.need) {
		// Part of a large frame: peeking would copy it again every time.
		return gnet.None
	}
	buf, err := c.Peek(-1)
	if err != nil || len(buf) == 0 {
		return gnet.None
	}
	l := st.loop
	out := l.begin(st)
	action, used := g.parse(c, st, buf, out)
	l.end()
	if len(*out) > 0 && st.phase != phaseClosed {
		_, _ = c.Write(*out)
	}
	wsframe.PutBuffer(out)
	g.flushCounts(l)
	if st.phase == phaseClosed {
		return gnet.None
	}
	if st.lingering {
		// The close frame is out (unless the client does not read: then
		// the close wait ends it): FIN, as Node's ws ends the socket.
		if c.OutboundBuffered() == 0 {
			shutdownWrite(c.Fd())
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
	var f wsframe.Frame
	for used < len(buf) && st.phase != phaseClosed {
		if st.phase == phaseOpen && c.OutboundBuffered()+len(*out) > g.backlog {
			// The client does not read its replies. gorilla and coder
			// would stop reading from it; gnet cannot, so rather than
			// buffer without end the server closes.
			g.fail(st, out, ws.StatusPolicyViolation)
		}
		if st.phase == phaseClosing {
			n, done := g.afterClose(st, buf[used:])
			if done {
				return gnet.Close, len(buf)
			}
			if n == 0 {
				return gnet.None, used
			}
			used += n
			continue
		}
		n := st.rd.Next(buf[used:], g.cfg.MaxMessage, &f)
		if f.Kind == wsframe.Incomplete {
			st.setNeed(f.Need)
			return gnet.None, used
		}
		st.need = 0
		used += n
		if action := g.frame(st, &f, out); action != gnet.None || st.phase != phaseOpen {
			if st.phase == phaseClosing && action == gnet.None && !st.lingering {
				continue // the server closed: look for the client's answer
			}
			return action, used
		}
	}
	return gnet.None, used
}

// afterClose handles the frame at the start of buf once the server has
// sent its close: the client's close frame ends the connection (done),
// anything else is dropped. n is how many bytes of buf it used, 0 when
// buf holds only part of a header.
func (g *gnetTarget) afterClose(st *gconn, buf []byte) (n int, done bool) {
	h, hlen, err := wsframe.ParseHeader(buf)
	if err == nil && hlen == 0 {
		st.setNeed(len(buf) + 1)
		return 0, false
	}
	if err != nil || !h.Masked || h.OpCode == ws.OpClose {
		// The client's close, or no length to skip by: the framing is lost.
		return len(buf), true
	}
	st.need = 0
	if avail := int64(len(buf) - hlen); h.Length > avail {
		st.skip = h.Length - avail
		return len(buf), false
	}
	return hlen + int(h.Length), false
}

// frame answers one frame the reader found, while the connection is open.
func (g *gnetTarget) frame(st *gconn, f *wsframe.Frame, out *[]byte) gnet.Action {
	switch f.Kind {
	case wsframe.Fail:
		if f.Lost {
			// The client's frames cannot be read on: the rest of the
			// buffer goes (see failLost).
			return g.failLost(st, out, ws.StatusCode(f.Code))
		}
		g.fail(st, out, ws.StatusCode(f.Code))
		// The header parsed, so the framing holds: the rest of this frame
		// is dropped as it comes, then the client's close is looked for.
		st.skip = f.Skip
	case wsframe.Ping:
		*out = wsframe.AppendFrame(*out, 0, ws.OpPong, f.Payload)
	case wsframe.Close, wsframe.BadClose:
		return g.closeFrame(st, f, out)
	case wsframe.Message:
		g.message(st, f, out)
		st.rd.Reset()
	}
	return gnet.None
}

// message checks one whole message and hands it to the session.
func (g *gnetTarget) message(st *gconn, f *wsframe.Frame, out *[]byte) {
	var plain *[]byte
	if f.Compressed {
		plain = wsframe.GetBuffer()
		defer wsframe.PutBuffer(plain)
	}
	data, code := wsframe.Decode(f.Op, f.Compressed, f.Payload, plain, g.cfg.MaxMessage)
	if code != 0 {
		g.fail(st, out, ws.StatusCode(code))
		return
	}
	st.loop.rx.add(len(data))
	if st.faults == nil {
		if !g.faults.On() {
			st.session.Message(Op(f.Op), data)
			return
		}
		st.faults = new(connFaults)
	}
	faultMessage(g.faults, st.faults, st, st.session, Op(f.Op), data)
}

// closeFrame answers the client's close frame with its code and reason
// (RFC 6455 5.5.1), as Node's ws does, or with the code the reader gives
// an invalid one, and closes the connection once the answer is written.
func (g *gnetTarget) closeFrame(st *gconn, f *wsframe.Frame, out *[]byte) gnet.Action {
	st.phase = phaseClosing
	st.reason = int32(f.Code)
	if f.Kind == wsframe.BadClose {
		*out = wsframe.AppendClose(*out, f.Code)
		return gnet.Close
	}
	*out = wsframe.AppendFrame(*out, 0, ws.OpClose, f.Payload)
	return gnet.Close
}

// Reply adds a message to the replies of this OnTraffic call, which go out
// in one write. A queued connection sends it through Enqueue instead.
func (st *gconn) Reply(op Op, data []byte) {
	l := st.loop
	if l == nil || l.g.opts.Queue > 0 || l.cur != st {
		_ = st.Enqueue(NewOutgoing(append([]byte(nil), data...)))
		return
	}
	if st.phase != phaseOpen {
		return
	}
	out := l.out
	n := len(data)
	var rsv byte
	if st.rd.Deflate {
		d := wsframe.GetDeflater()
		defer wsframe.PutDeflater(d)
		z, err := d.Deflate(data)
		if err != nil {
			l.g.fail(st, out, ws.StatusInternalServerError)
			return
		}
		data, rsv = z, ws.Rsv(true, false, false)
	}
	if len(data) < directWrite {
		*out = wsframe.AppendFrame(*out, rsv, ws.OpCode(op), data)
	} else {
		c := st.conn
		if len(*out) > 0 {
			_, _ = c.Write(*out)
			*out = (*out)[:0]
			if st.phase == phaseClosed {
				return
			}
		}
		sc := scratches.Get().(*frameScratch)
		sc.iov[0] = wsframe.AppendHeader(sc.hdr[:0], rsv, ws.OpCode(op), len(data))
		sc.iov[1] = data
		_, _ = c.Writev(sc.iov[:])
		sc.iov = [2][]byte{}
		scratches.Put(sc)
		if st.phase == phaseClosed {
			return
		}
	}
	l.tx.add(n)
}

// counts are a connection's messages and bytes not yet in the metrics.
// frames adds them in once per call rather than per message: on a
// pipelined connection a call echoes dozens, and four shared counters per
// message cost the loops several percent of their time.
type counts struct{ msgs, bytes int }

func (c *counts) add(n int) { c.msgs, c.bytes = c.msgs+1, c.bytes+n }

func (g *gnetTarget) flushCounts(l *gloop) {
	g.m.Received(l.rx.msgs, l.rx.bytes)
	g.m.Sent(l.tx.msgs, l.tx.bytes)
	l.rx, l.tx = counts{}, counts{}
}

// frameScratch is what writing a frame on its own needs for the moment:
// pooled, since one per busy loop is enough and idle connections far
// outnumber busy loops.
type frameScratch struct {
	hdr [wsframe.MaxHeader]byte // a frame header, written
	iov [2][]byte               // header and payload for Writev
}

var scratches = sync.Pool{New: func() any { return new(frameScratch) }}

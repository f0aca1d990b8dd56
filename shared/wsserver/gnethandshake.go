package wsserver

import (
	"bufio"
	"bytes"
	"net/http"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wsserver/wsframe"
)

// handshakeState is what a connection needs until its upgrade.
type handshakeState struct {
	accepted time.Time
	first    time.Time // first byte of the upgrade request
	lineOK   bool      // the request line has been checked
}

var headerEnd = []byte("\r\n\r\n")

// requestReader reads an upgrade request from gnet's buffer. Pooled: a
// bufio.Reader of its own would be 4 KiB of garbage per upgrade, most of
// what a connection leaves behind.
type requestReader struct {
	src bytes.Reader
	buf *bufio.Reader
}

var requestReaders = sync.Pool{New: func() any {
	rr := &requestReader{}
	rr.buf = bufio.NewReader(&rr.src)
	return rr
}}

// put gives rr back, holding nothing of the request.
func (rr *requestReader) put() {
	rr.src.Reset(nil)
	rr.buf.Reset(&rr.src)
	requestReaders.Put(rr)
}

// handshake reads the upgrade request once all of it has arrived, however
// many pieces it came in, checks it as the other targets do, and answers.
func (g *gnetTarget) handshake(c gnet.Conn, st *gconn) (gnet.Action, bool) {
	hs := st.hs
	if hs.first.IsZero() {
		hs.first = time.Now()
	}
	buf, err := c.Peek(-1)
	if err != nil {
		return gnet.None, false
	}
	end := bytes.Index(buf, headerEnd)
	if end < 0 {
		// As net/http: a bad request line is answered as soon as it is in,
		// a header that never ends once it is too large.
		if !hs.lineOK {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				if !validRequestLine(buf[:i]) {
					return g.refuse(c, st, malformed("malformed request line")), false
				}
				hs.lineOK = true
			}
		}
		if len(buf) > maxHeaderBytes+4096 {
			return g.refuse(c, st, &refusal{status: http.StatusRequestHeaderFieldsTooLarge, msg: "request header too large", result: protocol.ResultFailed}), false
		}
		return gnet.None, false
	}
	n := end + len(headerEnd)
	rr := requestReaders.Get().(*requestReader)
	defer rr.put()
	rr.src.Reset(buf[:n])
	rr.buf.Reset(&rr.src)
	req, err := http.ReadRequest(rr.buf)
	if err != nil {
		return g.refuse(c, st, malformed(err.Error())), false
	}
	if req.ProtoAtLeast(1, 1) && req.Host == "" {
		return g.refuse(c, st, malformed("missing required Host header")), false
	}
	if rf := admit(g.closing.Load(), req, g.cfg, g.gate, g.faults); rf != nil {
		return g.refuse(c, st, rf), false
	}
	st.held = true

	out := wsframe.GetBuffer()
	defer wsframe.PutBuffer(out)
	resp := append((*out)[:0], "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	resp = append(resp, acceptKey(req.Header.Get("Sec-WebSocket-Key"))...)
	if ext, ok := g.negotiate(req); ok {
		st.rd.Deflate = true
		resp = append(resp, "\r\nSec-WebSocket-Extensions: "...)
		resp = append(resp, ext...)
	}
	resp = append(resp, "\r\n\r\n"...)
	*out = resp
	_, _ = c.Discard(n)

	// Counted before the 101 goes out: a client that has read it may look
	// at /stats at once, and must find its handshake there.
	st.phase = phaseOpen
	st.timer.Stop()
	st.timer = nil
	st.hs = nil
	st.counted = true
	g.m.Handshake(protocol.ResultOK, transport, time.Since(hs.first))
	g.m.Opened()
	// Opened before the 101 is written: a client that has read it is a
	// member. What is enqueued meanwhile is flushed by a task that runs on
	// this loop after this call, so after the 101.
	st.session = withFaults(g.opts.Handler.Open(st), st, g.faults, st)
	st.due = clock() + int64(g.cfg.PingInterval)
	added := g.enter(st)
	if _, _ = c.Write(resp); st.phase == phaseClosed {
		return gnet.None, false // the write failed: gnet closed the connection, and OnClose settled it
	}
	if !added {
		// Shutdown began during the upgrade.
		st.Close(CloseGoingAway)
	}
	return gnet.None, true
}

func malformed(why string) *refusal {
	return &refusal{status: http.StatusBadRequest, msg: "malformed HTTP request: " + why, result: protocol.ResultFailed}
}

// refuse answers the request, then, as net/http does, sends FIN and drops
// what the client still sends until it closes or closeWait passes: closing
// at once with unread bytes would send RST, and the client could lose the
// answer.
func (g *gnetTarget) refuse(c gnet.Conn, st *gconn, rf *refusal) gnet.Action {
	st.counted = true
	g.m.Handshake(rf.result, transport, 0)
	if _, _ = c.Write(rf.bytes()); st.phase == phaseClosed {
		return gnet.None
	}
	_, _ = c.Discard(-1)
	st.phase = phaseLinger
	if c.OutboundBuffered() == 0 {
		shutdownWrite(c.Fd())
	}
	st.arm(g, closeWait)
	return gnet.None
}

// validRequestLine checks "METHOD SP TARGET SP HTTP/x.y" as net/http does.
func validRequestLine(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	method, rest, ok1 := bytes.Cut(line, []byte(" "))
	target, proto, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || len(method) == 0 || len(target) == 0 {
		return false
	}
	for _, b := range method {
		if b <= ' ' || b >= 0x7f || bytes.IndexByte([]byte(`()<>@,;:\"/[]?={}`), b) >= 0 {
			return false
		}
	}
	_, _, ok := http.ParseHTTPVersion(string(proto))
	return ok
}

// negotiate returns the Sec-WebSocket-Extensions value of the answer, if
// a permessage-deflate offer is accepted (see negotiateDeflate).
func (g *gnetTarget) negotiate(req *http.Request) (string, bool) {
	if !g.cfg.Compression {
		return "", false
	}
	return negotiateDeflate(req.Header)
}

package wsserver

import (
	"bufio"
	"bytes"
	"net/http"
	"sync"
	"time"
	"unsafe"

	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// handshakeState is what a connection needs until its upgrade.
// Its times are in clock() time (24 bytes in all, where time.Times made
// it 56): garbage once the connection is upgraded.
type handshakeState struct {
	accepted int64
	first    int64 // first byte of the upgrade request; 0 = none yet
	lineOK   bool  // the request line has been checked
}

// started reports whether any of the upgrade request has come.
func (hs *handshakeState) started() bool { return hs.first != 0 }

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
	if !hs.started() {
		hs.first = max(clock(), 1)
	}
	buf, err := c.Peek(-1)
	if err != nil {
		return gnet.None, false
	}
	end := bytes.Index(buf, headerEnd)
	if end < 0 {
		if rf := hs.partial(buf, g.cfg.HTTP.HeaderBytes); rf != nil {
			return g.refuse(c, st, rf), false
		}
		if st.late {
			// Read after its clock ran out (expire), and still not whole.
			g.headerTimeout(st)
			return gnet.Close, false
		}
		return gnet.None, false
	}
	n := end + len(headerEnd)
	if int64(n) > headerRoom(g.cfg.HTTP.HeaderBytes) {
		// Whole, but too large: it came in one read.
		return g.refuse(c, st, tooLarge()), false
	}
	if g.opts.Front != nil {
		return g.front(c, st, buf[:n], n)
	}
	fr := fastRequests.Get().(*fastRequest)
	defer fr.put()
	rr := requestReaders.Get().(*requestReader)
	defer rr.put()
	req, rf := readHead(fr, rr, buf[:n])
	if rf == nil {
		rf = admitHead(g.listening.Closing(), req, g.cfg, g.gate, g.faults)
	}
	if rf != nil {
		return g.refuse(c, st, rf), false
	}
	st.held = true
	return g.upgrade(c, st, req, n, g.opts.Handler.Open)
}

// partial checks an upgrade request whose header has not ended yet. As
// net/http: a bad request line is answered as soon as it is in, a header
// that never ends once it is too large (over limit, -max-header-bytes).
func (hs *handshakeState) partial(buf []byte, limit int64) *refusal {
	if !hs.lineOK {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			if !validRequestLine(buf[:i]) {
				return malformed("malformed request line")
			}
			hs.lineOK = true
		}
	}
	if int64(len(buf)) > headerRoom(limit) {
		return tooLarge()
	}
	return nil
}

// headerRoom is how much of a request head is read before a 431: the
// limit and 4096 bytes more, as net/http reads (its request line too).
func headerRoom(limit int64) int64 { return limit + 4096 }

func tooLarge() *refusal {
	return &refusal{status: http.StatusRequestHeaderFieldsTooLarge, msg: "request header too large", result: protocol.ResultFailed}
}

// readHead reads a whole request head: in place when it has the plain
// form, through net/http otherwise (net/http then reads and answers it as
// it would). What it returns lives in fr or rr until they are put back.
func readHead(fr *fastRequest, rr *requestReader, head []byte) (requestHead, *refusal) {
	var (
		req  requestHead = fr
		host string
	)
	if fr.parse(head) {
		host = first(fr, "Host")
	} else {
		rr.src.Reset(head)
		rr.buf.Reset(&rr.src)
		r, err := http.ReadRequest(rr.buf)
		if err != nil {
			return nil, malformed(err.Error())
		}
		req, host = (*httpHead)(r), r.Host
	}
	if _, atLeast11 := req.proto(); atLeast11 && host == "" {
		return nil, malformed("missing required Host header")
	}
	return req, nil
}

// upgrade answers an admitted request of n bytes with its 101 and opens
// the connection.
func (g *gnetTarget) upgrade(c gnet.Conn, st *gconn, req requestHead, n int, open func(Peer) Session) (gnet.Action, bool) {
	out := wsframe.GetBuffer()
	defer wsframe.PutBuffer(out)
	resp := append((*out)[:0], "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	resp = appendAcceptKey(resp, first(req, "Sec-Websocket-Key"))
	chosen, offered, _ := subprotocol(req, g.cfg.Subprotocols)
	if chosen != "" {
		resp = append(resp, "\r\nSec-WebSocket-Protocol: "...)
		resp = append(resp, chosen...)
	}
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
	began := st.hs.first
	st.phase = phaseOpen
	st.timer.Stop()
	st.timer = nil
	st.hs = nil
	st.counted = true
	g.m.Handshake(protocol.ResultOK, transport, time.Duration(clock()-began))
	countSubprotocol(g.m, chosen, offered)
	g.m.Opened()
	// Opened before the 101 is written: a client that has read it is a
	// member. What is enqueued meanwhile is flushed by a task that runs on
	// this loop after this call, so after the 101.
	st.session = open(st)
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
	rf.record(g.m)
	g.unserved(false)
	return g.answer(c, st, rf.bytes())
}

// answer writes resp, an answer that ends the connection, and lingers
// as refuse does.
func (g *gnetTarget) answer(c gnet.Conn, st *gconn, resp []byte) gnet.Action {
	if _, _ = c.Write(resp); st.phase == phaseClosed {
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
func (g *gnetTarget) negotiate(req requestHead) (string, bool) {
	if !g.cfg.Compression {
		return "", false
	}
	return negotiateDeflateIn(req.values(extensionsHeader))
}

// fastRequest is an upgrade request head read in place, without
// net/http, when it is in the plain form that every WebSocket client
// sends: http.ReadRequest allocates over 1 KiB for one (the Request,
// its URL, the header map, a string for every name and value), garbage
// that kept the heap, and so the RSS, of 18,000 idle connections higher.
// Anything else (another method or version, a target or a field that is
// not plain, a body, several Host fields) goes to http.ReadRequest as
// before, so every answer, and every error text, stays net/http's: for a
// head parse accepts, http.ReadRequest succeeds and sees the same method,
// version, Host and fields (TestFastRequestAgrees, FuzzFastRequest).
type fastRequest struct {
	fields []headerField // views into the buffer; valid until the head is discarded
	vals   []string      // what values returned last
}

type headerField struct{ name, value []byte }

var fastRequests = sync.Pool{New: func() any {
	return &fastRequest{fields: make([]headerField, 0, 16), vals: make([]string, 0, 4)}
}}

// maxFastFields is the most header fields parse reads; a request with
// more goes to net/http.
const maxFastFields = 64

// put gives fr back, holding nothing of the request.
func (fr *fastRequest) put() {
	clear(fr.fields)
	clear(fr.vals)
	fr.fields, fr.vals = fr.fields[:0], fr.vals[:0]
	fastRequests.Put(fr)
}

var crlf = []byte("\r\n")

// parse reads head, a request through its blank line, if it is
// "GET <target> HTTP/1.1" with an origin-form target of plain characters,
// then fields "Name: value" of token names and printable ASCII values,
// each line ending in CRLF, none folded, no Content-Length,
// Transfer-Encoding or Trailer, at most one Host. false: not in this
// form (fr is then to be ignored).
func (fr *fastRequest) parse(head []byte) bool {
	fr.fields = fr.fields[:0]
	line, rest, ok := bytes.Cut(head, crlf)
	if !ok || !bytes.HasPrefix(line, []byte("GET /")) || !bytes.HasSuffix(line, []byte(" HTTP/1.1")) {
		return false
	}
	if !plainTarget(line[len("GET ") : len(line)-len(" HTTP/1.1")]) {
		return false
	}
	hosts := 0
	for {
		if line, rest, ok = bytes.Cut(rest, crlf); !ok {
			return false
		}
		if len(line) == 0 {
			return len(rest) == 0
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || len(fr.fields) == maxFastFields {
			return false
		}
		for _, b := range name {
			if !isTokenByte(b) {
				return false
			}
		}
		for _, b := range value {
			if (b < 0x20 || b > 0x7e) && b != '\t' {
				return false
			}
		}
		switch {
		case asciiEqualFold(name, "Content-Length"), asciiEqualFold(name, "Transfer-Encoding"), asciiEqualFold(name, "Trailer"):
			return false
		case asciiEqualFold(name, "Host"):
			if hosts++; hosts > 1 {
				return false
			}
		}
		fr.fields = append(fr.fields, headerField{name, bytes.Trim(value, " \t")})
	}
}

func (fr *fastRequest) method() string        { return http.MethodGet }
func (fr *fastRequest) proto() (string, bool) { return "HTTP/1.1", true }

// values allocates nothing: the slice is reused by the next call, and
// the strings are views of the request's bytes in gnet's buffer, which
// are only good until the handshake call returns. The upgrade's checks
// only compare them, decode them, or format them into new strings.
func (fr *fastRequest) values(name string) []string {
	clear(fr.vals)
	fr.vals = fr.vals[:0]
	for _, f := range fr.fields {
		if asciiEqualFold(f.name, name) {
			fr.vals = append(fr.vals, unsafe.String(unsafe.SliceData(f.value), len(f.value)))
		}
	}
	if len(fr.vals) == 0 {
		return nil // as http.Header.Values
	}
	return fr.vals
}

// plainTarget reports whether target is an origin-form request target
// of unreserved, sub-delim, ":", "@", "/", "?" characters and whole
// percent-escapes: one that url.ParseRequestURI takes without complaint.
func plainTarget(target []byte) bool {
	if len(target) == 0 || target[0] != '/' {
		return false
	}
	for i := 0; i < len(target); i++ {
		switch b := target[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case bytes.IndexByte([]byte("-._~!$&'()*+,;=:@/?"), b) >= 0:
		case b == '%' && i+2 < len(target) && isHex(target[i+1]) && isHex(target[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

// isTokenByte reports whether b may be in a header field name (RFC 9110
// tchar), as net/textproto checks.
func isTokenByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), b) >= 0
}

// asciiEqualFold reports whether b and s are equal, ignoring ASCII case:
// for token names, whether net/textproto files them under one key.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

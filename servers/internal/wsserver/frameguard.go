package wsserver

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/shared/wsframe"
)

// The frame rules of package wsframe are the one place that decides what a
// client's frame header and close frame may be. gnet's parser applies them,
// and so does frameGuard, which reads in front of gorilla and coder: the
// three libraries answer a bad frame with the same close code at the same
// moment, as Node's ws does (a header is judged as soon as it is in, before
// its payload comes).

// frameError is a frame that breaks the rules, found by frameGuard.
type frameError struct {
	code int
	// lost: the connection cannot be read on, because the frame was the
	// client's close (it sends nothing after it) or its length is
	// unusable: the server sends its close and lingers.
	lost bool
	// echo, when not nil, is a valid close frame's payload (unmasked),
	// which the server answers with as it is; code is then the client's.
	// Only with frameGuard.ownClose.
	echo []byte
}

func (e *frameError) Error() string {
	return "frame refused with close code " + strconv.Itoa(e.code)
}

// holdSize is the largest piece frameGuard keeps back: a close frame,
// which it judges whole (the longest header of a control frame, 14 bytes,
// and 125 bytes of payload).
const holdSize = wsframe.MaxHeader + ws.MaxControlFramePayloadSize

// frameGuard reads a connection's frames in front of gorilla or coder and
// lets through only what the frame rules allow. A frame header, and a close
// frame whole, are held back until they are judged; payloads pass straight
// through. At the first bad frame it hands the library what came before it,
// then a *frameError; reading again after that drops everything up to the
// client's close frame (or, when the frame error is lost, lingers) and ends
// with io.EOF, which ends the library's own wait for the client's close.
//
// What it holds is bounded: holdSize bytes, and after a bad frame what the
// read that brought it had read beyond it.
type frameGuard struct {
	src     io.Reader    // the bytes the HTTP server had read ahead, then the connection
	raw     *trackedConn // for lingering
	max     int64
	deflate bool
	// ownClose: a valid close frame is not passed on but reported as a
	// frameError with echo set (gorilla refuses close codes registered
	// after it was written: 1014).
	ownClose bool

	msg  wsframe.InMessage
	left int64 // payload bytes of the current frame still to pass

	hold        [holdSize]byte
	ready, held int // hold[:ready] is judged, hold[ready:held] is not yet

	failed   *frameError
	reported bool // failed has been returned once
	drained  bool
	rest     []byte // from the bad frame's first byte: what had been read
}

func (fg *frameGuard) Read(p []byte) (int, error) {
	for {
		if fg.ready > 0 {
			n := copy(p, fg.hold[:fg.ready])
			copy(fg.hold[:], fg.hold[n:fg.held])
			fg.ready -= n
			fg.held -= n
			return n, nil
		}
		if fg.failed != nil {
			if !fg.reported {
				fg.reported = true
				return 0, fg.failed
			}
			if !fg.drained {
				fg.drained = true
				fg.drain()
			}
			return 0, io.EOF
		}
		if fg.held > 0 {
			// Part of a header or of a close frame: complete it here.
			if fg.held == len(fg.hold) {
				fg.failed = &frameError{code: int(ws.StatusProtocolError), lost: true}
				continue
			}
			n, err := fg.src.Read(fg.hold[fg.held:])
			fg.held += n
			fg.ready = fg.judge(fg.hold[:fg.held])
			if fg.failed != nil {
				fg.rest = append([]byte(nil), fg.hold[fg.ready:fg.held]...)
				fg.held = fg.ready
			}
			if fg.ready == 0 && fg.failed == nil && err != nil {
				return 0, err
			}
			continue
		}
		n, err := fg.src.Read(p)
		ok := fg.judge(p[:n])
		if fg.failed != nil {
			fg.rest = append([]byte(nil), p[ok:n]...)
		} else {
			fg.held = copy(fg.hold[:], p[ok:n]) // less than holdSize: see judge
		}
		switch {
		case fg.failed != nil && ok > 0:
			return ok, nil // what came before the bad frame; then the error
		case fg.failed == nil && (ok > 0 || err != nil):
			return ok, err
		}
	}
}

// judge goes through b, which starts where a frame's header or payload
// starts, and returns how much of it may pass: whole frame headers, whole
// close frames, and payloads. What it leaves is part of one header or one
// close frame, shorter than holdSize, unless it found a bad frame.
func (fg *frameGuard) judge(b []byte) int {
	ok := 0
	for ok < len(b) {
		if fg.left > 0 {
			n := min(fg.left, int64(len(b)-ok))
			ok += int(n)
			fg.left -= n
			continue
		}
		h, hlen, err := wsframe.ParseHeader(b[ok:])
		if err != nil {
			fg.failed = &frameError{code: int(ws.StatusProtocolError), lost: true}
			return ok
		}
		if hlen == 0 {
			return ok
		}
		if code := wsframe.HeaderCode(h, fg.msg, fg.deflate, fg.max); code != 0 {
			fg.failed = &frameError{code: code, lost: h.OpCode == ws.OpClose}
			return ok
		}
		if h.OpCode == ws.OpClose {
			end := hlen + int(h.Length) // <= holdSize: HeaderCode checked it
			if len(b)-ok < end {
				return ok
			}
			var payload [ws.MaxControlFramePayloadSize]byte
			p := payload[:copy(payload[:], b[ok+hlen:ok+end])]
			ws.Cipher(p, h.Mask, 0)
			code, fail := wsframe.CloseFrameCode(p)
			switch {
			case fail != 0:
				fg.failed = &frameError{code: fail, lost: true}
				return ok
			case fg.ownClose:
				fg.failed = &frameError{code: code, lost: true, echo: bytes.Clone(p)}
				return ok
			}
			ok += end
			continue
		}
		fg.msg = fg.msg.Next(h)
		ok += hlen
		fg.left = h.Length
	}
	return ok
}

// drain runs once the server has sent its close after a bad frame: it
// drops the rest of that frame and every frame after it until the client's
// close frame comes, the connection ends, or the read deadline (the
// caller's: closeWait) passes. When the framing is lost it lingers instead.
func (fg *frameGuard) drain() {
	_ = fg.raw.flush() // the server's close frame, if held
	if fg.failed.lost {
		fg.raw.linger()
		return
	}
	bufp := wsframe.GetBuffer()
	defer wsframe.PutBuffer(bufp)
	buf := append((*bufp)[:0], fg.rest...)
	fg.rest = nil
	var skip int64
	for {
		for len(buf) > 0 {
			if skip > 0 {
				n := min(skip, int64(len(buf)))
				buf = buf[n:]
				skip -= n
				continue
			}
			h, hlen, err := wsframe.ParseHeader(buf)
			if err != nil || hlen > 0 && (h.OpCode == ws.OpClose || !h.Masked) {
				return // the client's close (or garbage): done
			}
			if hlen == 0 {
				break
			}
			buf = buf[hlen:]
			skip = h.Length
		}
		// What is left is part of a header: read on after it.
		k := copy((*bufp)[:cap(*bufp)], buf)
		n, err := fg.src.Read((*bufp)[k:cap(*bufp)])
		buf = (*bufp)[:k+n]
		if err != nil {
			return
		}
	}
}

// guardedConn is the connection as gorilla or coder sees it: reads go
// through its frameGuard, and writes are watched until the upgrade
// response has gone, to learn whether permessage-deflate was agreed.
type guardedConn struct {
	net.Conn
	guard    *frameGuard
	answered bool // the upgrade response has been written
}

func (c *guardedConn) Read(p []byte) (int, error) { return c.guard.Read(p) }

func (c *guardedConn) Write(p []byte) (int, error) {
	if !c.answered {
		// gorilla writes its 101 response in one write.
		c.answered = true
		c.guard.deflate = agreedDeflate(p)
	}
	return c.Conn.Write(p)
}

// agreedDeflate reports whether an upgrade response accepts
// permessage-deflate.
func agreedDeflate(resp []byte) bool {
	end := bytes.Index(resp, []byte("\r\n\r\n"))
	if end < 0 {
		end = len(resp)
	}
	for line := range bytes.SplitSeq(resp[:end], []byte("\r\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(name), []byte("Sec-WebSocket-Extensions")) &&
			bytes.Contains(bytes.ToLower(value), []byte("permessage-deflate")) {
			return true
		}
	}
	return false
}

// guardedWriter hands the library a guarded connection when it hijacks.
type guardedWriter struct {
	http.ResponseWriter
	raw *trackedConn
	max int64
	// sniff: the library writes its upgrade response on the hijacked
	// connection (gorilla), not through the ResponseWriter (coder); it
	// also gets close frames answered for it (frameGuard.ownClose).
	sniff bool
	conn  *guardedConn // set by Hijack
}

// guard wraps w so that the connection a library hijacks from it reads
// through a frameGuard with the limit max.
func guard(w http.ResponseWriter, raw *trackedConn, max int64, sniff bool) *guardedWriter {
	return &guardedWriter{ResponseWriter: w, raw: raw, max: max, sniff: sniff}
}

func (w *guardedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// Frames the client sent right behind its request, which the HTTP
	// server has read already, go through the guard too.
	var src io.Reader = conn
	if n := brw.Reader.Buffered(); n > 0 {
		ahead, _ := brw.Reader.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), conn)
	}
	fg := &frameGuard{src: src, raw: w.raw, max: w.max, ownClose: w.sniff}
	if !w.sniff {
		// coder has set the response's header before hijacking.
		ext := strings.ToLower(w.Header().Get("Sec-WebSocket-Extensions"))
		fg.deflate = strings.Contains(ext, "permessage-deflate")
	}
	w.conn = &guardedConn{Conn: conn, guard: fg, answered: !w.sniff}
	brw.Reader.Reset(w.conn)
	return w.conn, brw, nil
}

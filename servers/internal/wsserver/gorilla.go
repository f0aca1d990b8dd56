package wsserver

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/wsframe"
)

var _ = registerHTTP(variants.Gorilla, gorillaUpgrader)

func gorillaUpgrader(cfg Settings) upgrader {
	u := &websocket.Upgrader{
		HandshakeTimeout:  cfg.HTTP.Header,
		CheckOrigin:       func(*http.Request) bool { return true }, // checkUpgrade has checked -origin
		EnableCompression: cfg.Compression,
	}
	// The frame headers are checked by the guard in front of gorilla,
	// sizes on the wire included; gorilla's own limit stays as a second
	// line. The decompressed size is checked while reading.
	wire := cfg.MaxMessage
	if cfg.Compression {
		wire = wsframe.WireLimit(cfg.MaxMessage)
	}
	return func(w http.ResponseWriter, r *http.Request, raw *trackedConn, m *metrics.Metrics) (wsConn, error) {
		w, answer := hijackAnswers(w, r, cfg.Compression)
		gw := guard(w, raw, cfg.MaxMessage, true)
		c, err := u.Upgrade(gw, r, answer)
		if err != nil {
			return nil, err
		}
		c.SetReadLimit(wire)
		return &gorillaConn{c: c, raw: raw, m: m, max: cfg.MaxMessage, guard: gw.conn.guard}, nil
	}
}

type gorillaConn struct {
	c     *websocket.Conn
	raw   *trackedConn
	m     *metrics.Metrics
	max   int64
	guard *frameGuard
	sent  atomic.Int32 // close code the server sent; 0 = none
}

func (g *gorillaConn) serve(s Session) string {
	for {
		op, r, err := g.c.NextReader()
		if err != nil {
			return g.ended(err)
		}
		if reason, done := g.message(s, op, r); done {
			return reason
		}
	}
}

// message reads one message into a pooled buffer, checks it, and hands it
// to the session.
func (g *gorillaConn) message(s Session, op int, r io.Reader) (string, bool) {
	buf := wsframe.GetBuffer()
	defer wsframe.PutBuffer(buf)
	err := wsframe.ReadMessage(r, buf, g.max)
	switch {
	case errors.Is(err, wsframe.ErrTooBig):
		return g.fail(websocket.CloseMessageTooBig), true
	case err != nil:
		return g.ended(err), true
	case op == websocket.TextMessage && !utf8.Valid(*buf):
		// gorilla does not check UTF-8 itself.
		return g.fail(websocket.CloseInvalidFramePayloadData), true
	}
	g.raw.received(len(*buf))
	if g.sent.Load() != 0 {
		return "", false // the server has sent its close: read on until the client answers
	}
	g.raw.holdWrites()
	s.Message(Op(op), *buf)
	return "", false
}

// write sends one message; after the server's close frame it sends nothing.
func (g *gorillaConn) write(op Op, data []byte) error {
	if g.sent.Load() != 0 {
		return nil
	}
	err := g.c.WriteMessage(int(op), data)
	if errors.Is(err, websocket.ErrCloseSent) {
		return nil
	}
	return err
}

// ended names how the connection ended after a read error.
func (g *gorillaConn) ended(err error) string {
	if code := g.sent.Load(); code != 0 {
		return codeReason(int(code))
	}
	var ce *websocket.CloseError
	var fe *frameError
	switch {
	case errors.As(err, &fe) && fe.echo != nil:
		// The client's close, which the guard has taken from gorilla:
		// answered with its code and reason, as Node's ws does.
		_ = g.c.WriteControl(websocket.CloseMessage, fe.echo, time.Now().Add(closeWait))
		return codeReason(fe.code)
	case errors.As(err, &fe):
		// A frame the rules refuse, which gorilla has not seen: send the
		// close, then wait for the client's (the guard drops the rest).
		g.sent.CompareAndSwap(0, int32(fe.code))
		_ = g.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(fe.code, ""), time.Now().Add(closeWait))
		_ = g.raw.SetReadDeadline(time.Now().Add(closeWait))
		_, _ = g.guard.Read(nil)
		return codeReason(int(g.sent.Load()))
	case errors.As(err, &ce):
		// The client's close (gorilla has answered with its code), or 1006
		// when the TCP connection ended without one.
		return codeReason(ce.Code)
	case netFailure(err):
		return reasonAbnormal
	case errors.Is(err, websocket.ErrReadLimit):
		// gorilla has sent 1009 and will read no more.
		g.closeAndLinger(websocket.CloseMessageTooBig)
		return reasonTooBig
	default:
		// A protocol error: gorilla has sent 1002 (a failed inflate it
		// does not answer: closeAndLinger does), and will read no more.
		g.closeAndLinger(websocket.CloseProtocolError)
		return reasonProtocol
	}
}

// closeAndLinger sends code unless a close frame has gone already, then
// lingers: gorilla's reader is done, so the client's answer is not parsed.
func (g *gorillaConn) closeAndLinger(code int) {
	g.sent.CompareAndSwap(0, int32(code))
	_ = g.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(closeWait))
	g.raw.linger()
}

// fail closes with code a connection whose reader is still sound: it reads
// (and drops) messages until the client answers the close or closeWait
// passes.
func (g *gorillaConn) fail(code int) string {
	g.close(code)
	for {
		if _, _, err := g.c.NextReader(); err != nil {
			return codeReason(int(g.sent.Load()))
		}
	}
}

// close sends code; the reader reads on until the client answers. gorilla
// allows WriteControl alongside the writer, whose message in progress goes
// first.
func (g *gorillaConn) close(code int) {
	if !g.sent.CompareAndSwap(0, int32(code)) {
		return
	}
	_ = g.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(closeWait))
	_ = g.raw.SetReadDeadline(time.Now().Add(closeWait))
}

// ping: gorilla's WriteControl may run alongside the writer; the pong is
// seen by the keepalive as bytes read.
func (g *gorillaConn) ping(timeout time.Duration) error {
	return g.c.WriteControl(websocket.PingMessage, nil, time.Now().Add(timeout))
}

// hijackAnswers readies the answers of a library that writes its own 101
// to the hijacked connection (gorilla, nbio): its permessage-deflate line
// (deflateAnswer) replaced when the offer named server_max_window_bits,
// and the subprotocol chosen (subprotocol.go), which such a library
// writes from the response header it is given, not from w's.
func hijackAnswers(w http.ResponseWriter, r *http.Request, compression bool) (http.ResponseWriter, http.Header) {
	if compression {
		if answer, ok := chooseDeflate(r); ok && answer != deflateAnswer {
			w = &answerOnHijack{ResponseWriter: w, answer: answer}
		}
	}
	var header http.Header
	if p := w.Header().Get("Sec-WebSocket-Protocol"); p != "" {
		header = http.Header{"Sec-Websocket-Protocol": {p}}
	}
	return w, header
}

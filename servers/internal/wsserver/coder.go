package wsserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/wsframe"
)

var _ = registerHTTP(variants.Coder, coderUpgrader)

func coderUpgrader(cfg Settings) upgrader {
	opts := &websocket.AcceptOptions{
		InsecureSkipVerify: true, // checkUpgrade has checked -origin
		CompressionMode:    websocket.CompressionDisabled,
	}
	if cfg.Compression {
		opts.CompressionMode = websocket.CompressionNoContextTakeover
	}
	return func(w http.ResponseWriter, r *http.Request, raw *trackedConn, m *metrics.Metrics) (wsConn, error) {
		if cfg.Compression {
			if answer, ok := chooseDeflate(r); ok {
				w = &answerOnWriteHeader{ResponseWriter: w, answer: answer}
			}
		}
		c, err := websocket.Accept(guard(w, raw, cfg.MaxMessage, false), r, opts)
		if err != nil {
			return nil, err
		}
		// The guard in front of coder checks sizes on the wire, and
		// message reads the decompressed size: coder's own limit (which
		// would stop at 32 KiB) would send its error text as the close
		// reason.
		c.SetReadLimit(-1)
		return &coderConn{c: c, raw: raw, m: m, max: cfg.MaxMessage}, nil
	}
}

type coderConn struct {
	c    *websocket.Conn
	raw  *trackedConn
	m    *metrics.Metrics
	max  int64
	sent atomic.Int32 // close code the server sent; 0 = none
}

// No deadlines on reads and writes: with one, coder would start a timer
// for every message.
var background = context.Background()

func (k *coderConn) serve(s Session) string {
	for {
		typ, r, err := k.c.Reader(background)
		if err != nil {
			return k.ended(err)
		}
		if reason, done := k.message(s, typ, r); done {
			return reason
		}
	}
}

func (k *coderConn) message(s Session, typ websocket.MessageType, r io.Reader) (string, bool) {
	buf := wsframe.GetBuffer()
	defer wsframe.PutBuffer(buf)
	switch err := wsframe.ReadMessage(r, buf, k.max); {
	case errors.Is(err, wsframe.ErrTooBig):
		return k.fail(websocket.StatusMessageTooBig), true
	case err != nil:
		return k.ended(err), true
	}
	if typ == websocket.MessageText && !utf8.Valid(*buf) {
		// coder does not check UTF-8 itself.
		return k.fail(websocket.StatusInvalidFramePayloadData), true
	}
	k.raw.received(len(*buf))
	k.raw.holdWrites()
	s.Message(Op(typ), *buf)
	return "", false
}

// write sends one message; after the server's close frame it sends nothing.
func (k *coderConn) write(op Op, data []byte) error {
	if k.sent.Load() != 0 {
		return nil
	}
	return k.c.Write(background, websocket.MessageType(op), data)
}

// ended names how the connection ended after a read error.
func (k *coderConn) ended(err error) string {
	if code := k.sent.Load(); code != 0 {
		return codeReason(int(code))
	}
	var fe *frameError
	if errors.As(err, &fe) {
		// A frame the rules refuse, which coder has not seen: Close sends
		// the code, and its wait for the client's close reads through the
		// guard, which drops everything up to it.
		return k.fail(websocket.StatusCode(fe.code))
	}
	if code := websocket.CloseStatus(err); code != -1 {
		// The client's close: coder has answered with its code and closed.
		return codeReason(int(code))
	}
	switch {
	case netFailure(err):
		_ = k.c.CloseNow()
		return reasonAbnormal
	default:
		return k.fail(websocket.StatusProtocolError)
	}
}

// fail closes with code: coder's Close sends the close frame (unless one
// has gone), reads and drops until the client's close frame comes, then
// closes the connection. The read deadline bounds that wait: coder skips
// the rest of a frame byte by byte with no deadline of its own, and after
// a protocol error it found in a data frame's header it does not skip that
// frame's payload, so it may wait for a close frame it cannot find.
func (k *coderConn) fail(code websocket.StatusCode) string {
	k.sent.CompareAndSwap(0, int32(code))
	_ = k.raw.SetReadDeadline(time.Now().Add(closeWait))
	_ = k.c.Close(code, "")
	return codeReason(int(k.sent.Load()))
}

// close sends code and waits for the client's answer; coder allows Close
// alongside the reader, which then sees the connection end.
func (k *coderConn) close(code int) {
	if k.sent.CompareAndSwap(0, int32(code)) {
		_ = k.raw.SetReadDeadline(time.Now().Add(closeWait))
		_ = k.c.Close(websocket.StatusCode(code), "")
	}
}

// ping: coder's Ping waits for the pong, which the reader sees.
func (k *coderConn) ping(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(background, timeout)
	defer cancel()
	return k.c.Ping(ctx)
}

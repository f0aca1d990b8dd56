package wsserver

import (
	"errors"
	"math"
	"net/http"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws"
	"github.com/lesismal/nbio/nbhttp"
	"github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// nbio's WebSocket framing (nbhttp/websocket) serves on the net/http front
// in the mode nbio calls blocking: the connection's read loop is serve's
// goroutine, as with gorilla and coder. nbio's poller is not used: it
// would take the descriptor out of the front that counts its bytes, guards
// its frames and holds its TLS.
var _ = registerHTTP(variants.Nbio, nbioUpgrader)

// nbioEngine is the nbhttp engine every nbio connection shares: only its
// allocator, its frame size and its UTF-8 check are used. It is made at
// init, as nbio makes its own default engine, so that its task pool's
// goroutines are there before any test looks for leaks.
var nbioEngine = func() *nbhttp.Engine {
	e := nbhttp.NewEngine(nbhttp.Config{ReleaseWebsocketPayload: true})
	// message checks UTF-8 itself, to close with 1007 where nbio would
	// send 1002.
	e.CheckUtf8 = func([]byte) bool { return true }
	// A message goes out as one frame, as the other libraries send it.
	e.MaxWebsocketFramePayloadSize = math.MaxInt32
	return e
}()

func nbioUpgrader(cfg Settings) upgrader {
	u := websocket.NewUpgrader()
	u.Engine = nbioEngine
	u.CheckOrigin = func(*http.Request) bool { return true } // checkUpgrade has checked -origin
	u.EnableCompression(cfg.Compression)
	u.BlockingModAsyncWrite = false // the layer's writer writes (queue.go)
	u.BlockingModHandleRead = false // serve reads
	u.KeepaliveTime = 0             // the layer pings (keepalive)
	u.MessageLengthLimit = int(min(cfg.MaxMessage, math.MaxInt32))
	u.OnMessage(func(c *websocket.Conn, op websocket.MessageType, data []byte) {
		if k, ok := c.Session().(*nbioConn); ok {
			k.message(op, data)
		}
	})
	return func(w http.ResponseWriter, r *http.Request, raw *trackedConn, m *metrics.Metrics) (wsConn, error) {
		w, answer := hijackAnswers(w, r, cfg.Compression)
		gw := guard(w, raw, cfg.MaxMessage, true)
		c, err := u.Upgrade(gw, r, answer)
		if err != nil {
			return nil, err
		}
		k := &nbioConn{c: c, raw: raw, guard: gw.conn.guard, max: cfg.MaxMessage}
		c.SetSession(k)
		return k, nil
	}
}

type nbioConn struct {
	c     *websocket.Conn
	raw   *trackedConn
	guard *frameGuard
	max   int64        // -max-message
	sent  atomic.Int32 // close code the server sent; 0 = none

	// Read and written by serve's goroutine only (message runs within
	// Parse).
	session Session
	// refused is the close code for a message that failed a check (1007
	// not UTF-8, 1009 over -max-message); message drops all after it.
	refused int
	empties emptyScan
}

// readBuffer is what one read takes from the connection for nbio's parser.
const readBuffer = 4 << 10

func (k *nbioConn) serve(s Session) string {
	k.session = s
	buf := make([]byte, readBuffer)
	for {
		n, err := k.c.Conn.Read(buf)
		for b := buf[:n]; len(b) > 0; {
			cut, op, empty := k.empties.scan(b)
			if perr := k.c.Parse(b[:cut]); perr != nil {
				return k.ended(perr)
			}
			if empty {
				k.message(op, nil)
			}
			if k.refused != 0 {
				return k.fail(k.refused)
			}
			b = b[cut:]
		}
		if err != nil {
			return k.ended(err)
		}
	}
}

// message hands one whole message to the session; data is valid only
// during the call (the engine frees it after).
func (k *nbioConn) message(op websocket.MessageType, data []byte) {
	switch {
	case k.refused != 0:
		return
	case int64(len(data)) > k.max:
		// An inflated message over -max-message: nbio's own limit lets
		// through what fits the buffer its allocator rounded up.
		k.refused = 1009
		return
	case op == websocket.TextMessage && !utf8.Valid(data):
		k.refused = 1007
		return
	}
	k.raw.received(len(data))
	if k.sent.Load() != 0 {
		return // the server has sent its close: read on until the client answers
	}
	k.raw.holdWrites()
	k.session.Message(Op(op), data)
}

// write sends one message; after the server's close frame it sends nothing.
func (k *nbioConn) write(op Op, data []byte) error {
	if k.sent.Load() != 0 {
		return nil
	}
	return k.c.WriteMessage(websocket.MessageType(op), data)
}

// ended names how the connection ended after a read or parse error.
func (k *nbioConn) ended(err error) string {
	if code := k.sent.Load(); code != 0 {
		return codeReason(int(code))
	}
	var fe *frameError
	switch {
	case errors.As(err, &fe) && fe.echo != nil:
		// The client's close, which the guard has taken from nbio:
		// answered with its code and reason, as Node's ws does.
		_ = k.c.WriteMessage(websocket.CloseMessage, fe.echo)
		return codeReason(fe.code)
	case errors.As(err, &fe):
		// A frame the rules refuse, which nbio has not seen: send the
		// close, then wait for the client's (the guard drops the rest).
		k.close(fe.code)
		_, _ = k.guard.Read(nil)
		return codeReason(int(k.sent.Load()))
	case netFailure(err):
		return reasonAbnormal
	case errors.Is(err, websocket.ErrMessageTooLarge):
		// nbio has sent 1009 (an inflated message over -max-message).
		k.sent.CompareAndSwap(0, 1009)
		k.raw.linger()
		return reasonTooBig
	default:
		// A protocol error nbio found (an inflate that failed): its parser
		// is done, so the client's answer is not parsed.
		if k.sent.CompareAndSwap(0, 1002) {
			_ = k.c.WriteClose(1002, "")
		}
		k.raw.linger()
		return reasonProtocol
	}
}

// fail closes with code a connection whose reader is still sound: it reads
// (and drops) what comes until the client answers the close or closeWait
// passes.
func (k *nbioConn) fail(code int) string {
	k.close(code)
	buf := make([]byte, readBuffer)
	for {
		if _, err := k.c.Conn.Read(buf); err != nil {
			return codeReason(int(k.sent.Load()))
		}
	}
}

// close sends code; the reader reads on until the client answers. nbio
// writes under the connection's lock, which a write to a client that does
// not read holds: the write deadline ends such a write, so that the close
// goes out within closeWait or not at all.
func (k *nbioConn) close(code int) {
	if !k.sent.CompareAndSwap(0, int32(code)) {
		return
	}
	_ = k.raw.SetWriteDeadline(time.Now().Add(closeWait))
	_ = k.c.WriteClose(code, "")
	_ = k.raw.SetReadDeadline(time.Now().Add(closeWait))
}

// ping: nbio's writes may run alongside the reader; the pong is seen by
// the keepalive as bytes read.
func (k *nbioConn) ping(time.Duration) error {
	return k.c.WriteMessage(websocket.PingMessage, nil)
}

// emptyScan follows the frames serve hands nbio's parser to find the
// messages with no payload, which nbio v1.6.8 drops (its parser hands on a
// message only once it holds bytes), so that serve delivers them in their
// place, in order. The guard has checked every frame it lets through.
type emptyScan struct {
	head  []byte    // the start of a header split across reads
	left  int64     // payload bytes of the current frame still to come
	op    ws.OpCode // the message under way
	bytes int64     // its payload so far
}

// scan reads b up to the end of the next message with no payload, returning
// how far it read and that message's opcode; without one in b, it reads all
// of b.
func (e *emptyScan) scan(b []byte) (int, websocket.MessageType, bool) {
	i := 0
	for i < len(b) {
		if e.left > 0 {
			n := min(int64(len(b)-i), e.left)
			i += int(n)
			e.left -= n
			continue
		}
		had := len(e.head)
		e.head = append(e.head, b[i:min(len(b), i+wsframe.MaxHeader-had)]...)
		h, n, err := wsframe.ParseHeader(e.head)
		switch {
		case err != nil:
			return len(b), 0, false // the guard refuses it
		case n == 0:
			return len(b), 0, false // the rest of the header is still to come
		}
		e.head = e.head[:0]
		i += n - had
		e.left = h.Length
		if h.OpCode.IsControl() {
			continue
		}
		if h.OpCode != ws.OpContinuation {
			e.op, e.bytes = h.OpCode, 0
		}
		e.bytes += h.Length
		if h.Fin && e.bytes == 0 {
			return i, websocket.MessageType(e.op), true
		}
	}
	return len(b), 0, false
}

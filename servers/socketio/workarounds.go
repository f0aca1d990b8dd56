package socketio

import (
	"bytes"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"
	"github.com/zishang520/socket.io/parsers/engine/v3/packet"
	"github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/servers/engine/v3/transports"
	"github.com/zishang520/socket.io/v3/pkg/types"
	"github.com/zishang520/socket.io/v3/pkg/utils"
)

// The places where github.com/zishang520/socket.io v3.0.6 answers
// differently from Node's engine.io 6 / socket.io 4, and what corrects each:
//
//   - holdUntilRegistered: an event sent right after a namespace CONNECT
//     could close the whole session.
//   - writtenBeforeConnect: a CONNECT repeated right after its ack (which
//     closes the session) could close it before the ack was written.
//   - closeAfterPoll: a long-poll GET sent before a POSTed close packet
//     could be answered 400 instead of a noop.
//   - pollAfterUpgrade: a long-poll GET sent after the upgrade packet could
//     be answered as if the session were still polling.
//   - pongAfterPing: a pong that came back quickly could close the session
//     with "ping timeout".
//   - closingWebSocket: a WebSocket the server closed ended without a close
//     frame.
//   - closingPolling: a polling session the server closed with no GET
//     pending (the connect timeout) was counted abandoned, as if the
//     client had left.
//   - dataRequestAborted: a POST under way when its session closed (as
//     after a malformed packet) was answered 429.
//
// Node reads every connection on one thread, in the order the bytes
// arrived; the library serves each connection on its own goroutine, so two
// requests of one session that a client sent one after the other can be
// handled in either order. Each of the first four corrections waits, for
// at most raceWait, for the event that Node would have seen first.

// raceWait bounds each wait below. Node's engine.io checks an upgrading
// session's long-poll every 100 ms; a client that does what these waits
// cover is kept no longer than that.
const raceWait = 100 * time.Millisecond

// serveInOrder serves a request of an existing session (sid) after the
// request of the same session that the client sent before it.
func (s *Server) serveInOrder(eio http.Handler, w http.ResponseWriter, r *http.Request, sid, transport string) {
	v, ok := s.sessions.Load(sid)
	if !ok {
		eio.ServeHTTP(w, r)
		return
	}
	sess := v.(*session)
	polling := transport == transports.POLLING
	switch {
	case websocket.IsWebSocketUpgrade(r):
		sess.upgrades.Add(1)
		defer sess.upgrades.Add(-1)
	case polling && r.Method == http.MethodGet:
		sess.pollAfterUpgrade()
	case polling && r.Method == http.MethodPost:
		if hasClosePacket(r, s.cfg.MaxPayload, sess.conn.Protocol()) {
			sess.closeAfterPoll()
		}
		w = dataRequestAborted{w}
	}
	eio.ServeHTTP(w, r)
}

// dataRequestAborted: when a polling session closes while a POST of it is
// being read (a malformed Socket.IO packet in it, the connect or ping
// timeout), the library answers that POST 429 Too Many Requests. Node's
// engine.io destroys the request's connection instead, without an answer,
// which a client cannot tell from a network fault; the request was not
// too many, so it gets 400 Bad Request (and the library's
// "Connection: close").
type dataRequestAborted struct{ http.ResponseWriter }

func (w dataRequestAborted) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		code = http.StatusBadRequest
	}
	w.ResponseWriter.WriteHeader(code)
}

// closeAfterPoll: a client with a long-poll GET outstanding that POSTs a
// close packet gets a noop on the GET from Node (its polling transport's
// onClose answers the pending request) and a 400 on any GET after. Here
// the GET and the POST race, and a POST handled first closes the session:
// the GET is then answered 400 "Session ID unknown", or, caught between
// the engine's checks, is left waiting. So a close packet waits until a
// long-poll is pending.
func (sess *session) closeAfterPoll() {
	spinUntil(raceWait, func() bool {
		t := sess.conn.Transport()
		return sess.conn.ReadyState() != "open" || t.Name() != transports.POLLING || t.Writable()
	})
}

// pollAfterUpgrade: once a client has sent the upgrade packet (5) over
// the new WebSocket, Node answers a long-poll GET of that session 400
// "Bad request" (the session is on WebSocket now). Here the GET can be
// handled before the WebSocket's reader has read the 5: the GET then
// becomes the pending poll and is answered 200 with the close packet the
// upgrade writes to the old transport. So a GET that arrives while an
// upgrade is under way waits for it to end, either way. The library clears
// its "upgrading" flag before it switches transports, so the end is the
// switch itself once the WebSocket has read the upgrade packet.
func (sess *session) pollAfterUpgrade() {
	spinUntil(raceWait, func() bool {
		switch {
		case sess.conn.ReadyState() != "open" || sess.conn.Transport().Name() != transports.POLLING:
			return true
		case sess.upgradeRead.Load():
			return false // the switch is under way
		}
		return sess.upgrades.Load() == 0 && !sess.conn.Upgrading()
	})
}

// hasClosePacket reports whether a POSTed payload of an Engine.IO session
// of that protocol (3 or 4) holds a close packet ("1"; in v4, packets are
// separated by 0x1e). It reads at most what
// the engine would (maxPayload bytes) and puts it back in front of the rest
// of the body. A body over maxPayload is left to the engine, which answers
// 413.
func hasClosePacket(r *http.Request, maxPayload int64, protocol int) bool {
	if r.Body == nil || r.ContentLength > maxPayload {
		return false
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, maxPayload))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(payload), r.Body), r.Body}
	if err != nil {
		return false
	}
	if protocol == 3 {
		return hasClosePacketV3(payload, r.Header.Get("Content-Type") == "application/octet-stream")
	}
	for packet := range bytes.SplitSeq(payload, []byte{0x1e}) {
		if len(packet) > 0 && packet[0] == '1' {
			return true
		}
	}
	return false
}

// pongAfterPing: the library's ping timer sends the ping and only then
// arms the ping timeout (Node does both in one turn of its loop, before any
// answer can be read). When that goroutine is held up in between (a busy
// machine), the client's pong is handled first and clears the previous
// timeout, then the new one is armed and closes a live session pingTimeout
// later with "ping timeout". So a pong waits, on the reader goroutine,
// until the timeout of the ping it answers is armed.
func (sess *session) pongAfterPing() {
	if sess.pingTimeoutTimer == nil || !sess.pingPending.CompareAndSwap(true, false) {
		return
	}
	before := sess.timerBeforePing.Load()
	spinUntil(raceWait, func() bool {
		return sess.pingTimeoutTimer() != before || sess.conn.ReadyState() != "open"
	})
}

// pingCreated runs on the ping timer's goroutine as it creates a ping,
// before it arms that ping's timeout.
func (sess *session) pingCreated() {
	if sess.pingTimeoutTimer != nil {
		sess.timerBeforePing.Store(sess.pingTimeoutTimer())
		sess.pingPending.Store(true)
	}
}

// pingTimeoutTimerOf returns a reader of the engine socket's ping timeout
// timer, which the library keeps private; nil (and pongAfterPing does
// nothing) if the socket is not laid out as in v3.0.6. The field is looked
// up once per socket type, not on every connect.
func pingTimeoutTimerOf(conn engine.Socket) func() *utils.Timer {
	v := reflect.ValueOf(conn)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	at := pingTimerField.Load()
	if at == nil || at.typ != v.Type() {
		at = &fieldAt{typ: v.Type()}
		f, ok := v.Type().Elem().FieldByName("pingTimeoutTimer")
		if ok && len(f.Index) == 1 && f.Type == reflect.TypeFor[atomic.Pointer[utils.Timer]]() {
			at.offset, at.ok = f.Offset, true
		}
		pingTimerField.Store(at)
	}
	if !at.ok {
		return nil
	}
	timer := (*atomic.Pointer[utils.Timer])(unsafe.Add(v.UnsafePointer(), at.offset))
	return timer.Load
}

// fieldAt is where a struct type (behind a pointer, typ) keeps a field.
type fieldAt struct {
	typ    reflect.Type
	offset uintptr
	ok     bool // the field is there, with the expected type
}

// pingTimerField is the engine socket's pingTimeoutTimer field.
var pingTimerField atomic.Pointer[fieldAt]

// holdUntilRegistered works around a race in zishang520/socket.io v3.0.6:
// it writes a namespace's CONNECT ack before it registers the socket that
// will receive that namespace's packets, and a packet decoded in between
// closes the whole session ("invalid state"). A client that emits as soon
// as it is connected (most load clients) loses a few percent of its
// sessions that way. The engine hands us each incoming packet before the
// library decodes it, so an event that arrives in that window waits here,
// on the reader goroutine, until onConnect says the socket is registered.
// The window is a few microseconds; the bound is for a socket that never
// gets there. The packet waits on a channel that onConnect closes, not by
// polling: on a busy machine each runtime.Gosched of a poll waits for every
// other runnable goroutine, and each sleep for a timer tick, long after the
// socket is there.
func (sess *session) holdUntilRegistered() {
	if sess.registering.Load() <= 0 {
		return
	}
	sess.mu.Lock()
	if sess.registering.Load() <= 0 {
		sess.mu.Unlock()
		return
	}
	if sess.registered == nil {
		sess.registered = make(chan struct{})
	}
	registered := sess.registered
	sess.mu.Unlock()
	t := time.NewTimer(raceWait)
	defer t.Stop()
	select {
	case <-registered:
	case <-t.C:
	}
}

// writtenBeforeConnect works around an ordering of zishang520/socket.io
// v3.0.6: a CONNECT the library refuses by closing the session (one for
// a namespace already joined: "invalid state") closes the WebSocket at
// once, dropping what the transport's writer has not written yet, as the
// ack of the CONNECT before it, which Node writes first (its close waits
// for the buffer to drain). A CONNECT over WebSocket waits here, on the
// reader goroutine, until what the session has queued is written: at once
// for a first CONNECT, whose open packet is out; at most raceWait
// otherwise. Over polling nothing is dropped (what waits for a GET stays
// in the session's buffer, which the close drains), and a POST must not
// wait: on blocking it holds the loop.
func (sess *session) writtenBeforeConnect() {
	if sess.conn.Transport().Name() != transports.POLLING {
		waitUntil(raceWait, sess.written)
	}
}

// written reports whether every packet the session has made has been
// handed to its transport and, on a WebSocket, written.
func (sess *session) written() bool {
	transport := sess.conn.Transport()
	return sess.queued.Load() <= 0 && (transport.Name() == transports.POLLING || transport.Writable())
}

// registeredOne is onConnect's: a namespace socket whose CONNECT ack was
// written is registered now; packets held for it go on.
func (sess *session) registeredOne() {
	if sess.registering.Add(-1) > 0 {
		return
	}
	sess.mu.Lock()
	if sess.registered != nil {
		close(sess.registered)
		sess.registered = nil
	}
	sess.mu.Unlock()
}

// sessionOf finds the session of the request a transport is made for: an
// open request carries it in its context (track), an upgrade names it.
func (s *Server) sessionOf(ctx *types.HttpContext) *session {
	if sess, ok := ctx.Request().Context().Value(sessionKey{}).(*session); ok {
		return sess
	}
	if v, ok := s.sessions.Load(ctx.Query().Peek("sid")); ok {
		return v.(*session)
	}
	return nil
}

// pollingTransport builds the engine's polling transport with
// closingPolling.
type pollingTransport struct{ s *Server }

func (b pollingTransport) New(ctx *types.HttpContext) transports.Transport {
	inner, _ := engine.Polling.New(ctx).(transports.Polling)
	t := &closingPolling{Polling: inner, sess: b.s.sessionOf(ctx)}
	// The transport closes, reads and writes through its prototype.
	t.Prototype(t)
	return t
}

func (pollingTransport) Name() string          { return transports.POLLING }
func (pollingTransport) HandlesUpgrades() bool { return false }
func (pollingTransport) UpgradesTo() []string  { return engine.Polling.UpgradesTo() }

// closingPolling: socket.io's connect timeout closes a session that has
// joined no namespace, whatever its transport (Node and the library
// alike). Over WebSocket it ends at once ("forced close": the server gave
// up, counted failed). Over polling with no GET pending, the close waits
// for the client's next GET, and a client that never sends one leaves by
// ping timeout, which alone would count as abandoned. This marks the
// session closed by the server when the close begins, so that both count
// failed.
type closingPolling struct {
	transports.Polling
	sess *session
}

func (t *closingPolling) DoClose(fn types.Callable) {
	// Only the engine socket's own Close passes a callback (it ends the
	// session with "forced close"); a close that follows the session's end
	// passes none.
	if fn != nil && t.sess != nil {
		t.sess.serverClosed.Store(true)
	}
	t.Polling.DoClose(fn)
}

// webSocketTransport builds the engine's WebSocket transport with two
// corrections: closingWebSocket, and it tells an upgrading session when
// the client's upgrade packet arrives (pollAfterUpgrade).
type webSocketTransport struct{ s *Server }

func (b webSocketTransport) New(ctx *types.HttpContext) transports.Transport {
	t := &closingWebSocket{Websocket: transports.NewWebSocket(ctx), conn: ctx.Websocket}
	// The transport closes through its prototype's DoClose.
	t.Prototype(t)
	if ctx.Query().Has("sid") {
		if sess := b.s.sessionOf(ctx); sess != nil {
			// Registered before the engine's own upgrade listener, so it runs
			// first.
			_ = t.On("packet", func(args ...any) {
				if p, ok := args[0].(*packet.Packet); ok && p.Type == packet.UPGRADE {
					sess.upgradeRead.Store(true)
				}
			})
		}
	}
	return t
}

func (webSocketTransport) Name() string          { return transports.WEBSOCKET }
func (webSocketTransport) HandlesUpgrades() bool { return true }
func (webSocketTransport) UpgradesTo() []string  { return nil }

// closingWebSocket: Node's engine.io closes a WebSocket it ends (the
// connect timeout, a ping timeout, a parse error, shutdown) with ws's
// close(), which sends a close frame without a status code: the client sees
// 1005. The library closes the TCP connection at once, and the client sees
// 1006 (abnormal closure). This sends the frame first; gorilla lets it go
// out between two messages of the transport's writer.
type closingWebSocket struct {
	transports.Websocket
	conn *types.WebSocketConn
}

// closeFrameWait bounds the close frame's write to a client that does not
// read.
const closeFrameWait = time.Second

func (t *closingWebSocket) DoClose(fn types.Callable) {
	// The library runs fn (which ends the session, with its reason) before
	// it closes the connection; the frame goes in between, so that the
	// client's answer to it cannot end the session first with another
	// reason, as in Node, where both happen in one turn of the loop.
	t.Websocket.DoClose(func() {
		if fn != nil {
			fn()
		}
		if t.conn != nil && t.conn.Conn != nil {
			_ = t.conn.WriteControl(websocket.CloseMessage, []byte{}, time.Now().Add(closeFrameWait))
		}
	})
}

// spinUntil waits until cond holds or limit has passed: first by yielding
// (the event it waits for is usually one scheduler turn away), then by
// polling every 100 µs.
func spinUntil(limit time.Duration, cond func() bool) {
	for i := 0; i < 10 && !cond(); i++ {
		runtime.Gosched()
	}
	for end := time.Now().Add(limit); !cond() && time.Now().Before(end); {
		time.Sleep(100 * time.Microsecond)
	}
}

package sioengine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Transport names, as the transport query parameter spells them.
const (
	Polling   = "polling"
	WebSocket = "websocket"
)

// Options configure a Server. The zero value of a field is the default
// of Node's engine.io / socket.io, noted beside it.
type Options struct {
	PingInterval   time.Duration // 25 s
	PingTimeout    time.Duration // 20 s
	ConnectTimeout time.Duration // 45 s: from the open to the first namespace CONNECT
	MaxPayload     int64         // 1,000,000 bytes: an Engine.IO packet, a POST body
	Transports     []string      // polling, websocket
	// Origins, when not empty, are the only Origin values an open request
	// may carry (403 otherwise); CORS answers name the request's origin.
	Origins []string
	// AllowOrigin, when set, allows more origins: one it accepts may open
	// a session whatever Origins says, and its CORS answers name it
	// (rather than "*", which a browser refuses with credentials).
	AllowOrigin func(origin string) bool
	Compression bool // permessage-deflate on WebSocket
	// HandshakeTimeout bounds a WebSocket upgrade (10 s).
	HandshakeTimeout time.Duration
	// Namespaces are the namespaces a client may join; "/" is always one.
	Namespaces []string
	// AnyNamespace lets a client join any other namespace too, made on its
	// first CONNECT (as Node's io.of(/.*/)), up to MaxNamespaces made so:
	// past that a CONNECT to a new one is refused as an unknown namespace,
	// since every namespace made is held until the server ends.
	AnyNamespace  bool
	MaxNamespaces int
	// MaxAttachments bounds the binary attachments of one packet
	// (DefaultMaxAttachments).
	MaxAttachments int
	// AllowEIO3 serves Engine.IO v3 / Socket.IO v2 clients too (an open
	// request with EIO other than 4, as Node's allowEIO3 decides); without
	// it their open is answered 400 "Unsupported protocol version".
	AllowEIO3 bool
	// Recovery, when not 0, is connection state recovery's window (Node's
	// connectionStateRecovery.maxDisconnectionDuration; recovery.go).
	// Engine.IO v3 sessions are not recovered (Node sends them no pid).
	Recovery time.Duration
	Hooks    Hooks
}

// DefaultMaxAttachments is the attachment count a binary packet may
// announce unless Options say otherwise: Node's, whose socket.io-parser
// (4.2.7, maxAttachments) refuses a packet that announces more, and
// socket.io closes its session.
const DefaultMaxAttachments = 10

// Hooks are what the application does with sessions and sockets. Each may
// be nil. None may block: they run on the session's reader (a WebSocket's
// goroutine or, on gnet, its event loop; a POST's handler) or on a timer.
type Hooks struct {
	// Opened: an open request (r) made session c; before its open packet
	// is written.
	Opened func(c *Conn, r *http.Request)
	// Closed: the session ended, with Node's engine.io reason ("transport
	// close", "ping timeout", "forced close", ...). Its sockets have left
	// their namespaces.
	Closed func(c *Conn, reason string)
	// Connecting is the namespace middleware: it calls next once, from any
	// goroutine, with nil to admit the socket or an error that the client
	// gets as CONNECT_ERROR.
	Connecting func(s *Socket, next func(error))
	// Connected: the CONNECT ack is queued and the socket is a member of
	// its namespace.
	Connected func(s *Socket)
	// Refused: the session was answered a CONNECT_ERROR.
	Refused func(c *Conn)
	// NamespaceMade: a namespace was made by a client's CONNECT
	// (AnyNamespace), before its first socket joins it.
	NamespaceMade func(n *Namespace)
	// Event: a client event, in the order the session's events arrived.
	Event func(s *Socket, e *Event)
	// Received sees each message a session reads, before it is acted
	// on: its payload (without the Engine.IO type byte; valid only during
	// the call), a Socket.IO packet or, binary, an attachment.
	Received func(c *Conn, data []byte, binary bool)
	// Sent counts the message payload bytes queued for a session. It
	// runs under the session's lock: it must not call the Conn's methods.
	Sent func(c *Conn, bytes int)
	// Disconnected: a socket is leaving its namespace, with Node's
	// reason ("client namespace disconnect", "server namespace
	// disconnect", or its session's close reason); its rooms can still be
	// read.
	Disconnected func(s *Socket, reason string)
	// Upgraded: the session's transport is WebSocket now, after polling.
	Upgraded func(c *Conn)
	// Joined and Left: a socket joined a room it was not in, or left
	// one it was in (Join and Leave; not its own room, not the rooms it
	// leaves by disconnecting, which Disconnected can read).
	Joined, Left func(s *Socket, room string)
	// UnknownSid: a request named a session this server does not hold.
	UnknownSid func()
	// Unsupported: an Engine.IO v3 open request was refused (no
	// AllowEIO3).
	Unsupported func(r *http.Request)
	// Evicted: with Recovery, a kept socket (EvictedSession) or event
	// (EvictedPacket) was let go before its window ended, over the bounds.
	Evicted func(kind string)
}

// Server is an Engine.IO v4 / Socket.IO v5 server (and v3 / v2 with
// Options.AllowEIO3): an http.Handler for the /socket.io/ path.
type Server struct {
	opts     Options
	upgrader websocket.Upgrader
	nsMu     sync.RWMutex
	nsps     map[string]*Namespace
	made     int      // namespaces made by a CONNECT (AnyNamespace)
	conns    sync.Map // sid -> *Conn
	count    atomic.Int64
	closed   atomic.Bool
	wheels   sync.Map // wsserver.Loop -> *wheel: the gnet loops' timers (gnet.go)
}

// New builds a Server.
func New(o Options) *Server {
	if o.MaxAttachments <= 0 {
		o.MaxAttachments = DefaultMaxAttachments
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	s := &Server{opts: o, nsps: map[string]*Namespace{}}
	for _, name := range append([]string{"/"}, o.Namespaces...) {
		s.nsps[name] = newNamespace(name, o)
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout:  o.HandshakeTimeout,
		CheckOrigin:       func(*http.Request) bool { return true }, // checked in admitOpen
		EnableCompression: o.Compression,
		// A write buffer only while writing: an idle session holds none.
		WriteBufferPool: &sync.Pool{},
	}
	return s
}

// Namespace returns a namespace by name; nil if the server has none.
func (s *Server) Namespace(name string) *Namespace {
	s.nsMu.RLock()
	defer s.nsMu.RUnlock()
	return s.nsps[name]
}

// Namespaces returns every namespace the server has, in no order.
func (s *Server) Namespaces() []*Namespace {
	s.nsMu.RLock()
	defer s.nsMu.RUnlock()
	return slices.Collect(maps.Values(s.nsps))
}

// joinable is the namespace a CONNECT names: one the server has, or with
// AnyNamespace one made now (Hooks.NamespaceMade is told); nil if it may
// not be joined.
func (s *Server) joinable(name string) *Namespace {
	if nsp := s.Namespace(name); nsp != nil || !s.opts.AnyNamespace {
		return nsp
	}
	s.nsMu.Lock()
	nsp := s.nsps[name]
	if nsp == nil && s.made < s.opts.MaxNamespaces {
		nsp = newNamespace(name, s.opts)
		s.nsps[name] = nsp
		s.made++
	} else {
		s.nsMu.Unlock()
		return nsp
	}
	s.nsMu.Unlock()
	if h := s.opts.Hooks.NamespaceMade; h != nil {
		h(nsp)
	}
	return nsp
}

// Len is the number of sessions held.
func (s *Server) Len() int { return int(s.count.Load()) }

// Engine.IO error codes and messages, as Node's engine.io answers them.
const (
	codeUnknownTransport = 0
	codeUnknownSid       = 1
	codeBadHandshake     = 2
	codeBadRequest       = 3
	codeForbidden        = 4
	codeUnsupported      = 5
)

var errorMessages = [...]string{
	"Transport unknown", "Session ID unknown", "Bad handshake method", "Bad request", "Forbidden",
	"Unsupported protocol version",
}

// refuse answers a request Node's way: JSON for polling, the bare
// message for an upgrade (abortUpgrade).
func refuse(w http.ResponseWriter, r *http.Request, code int, message string) {
	if message == "" {
		message = errorMessages[code]
	}
	status := http.StatusBadRequest
	if code == codeForbidden {
		status = http.StatusForbidden
	}
	if websocket.IsWebSocketUpgrade(r) {
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(message)))
		w.WriteHeader(status)
		_, _ = w.Write([]byte(message))
		return
	}
	body, _ := json.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// ServeHTTP serves one Engine.IO request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	upgrade := websocket.IsWebSocketUpgrade(r)
	// Node's engine.io serves upgrades apart from its request handler,
	// and its CORS headers with the requests only.
	if !upgrade && s.cors(w, r) {
		return
	}
	q := r.URL.Query()
	transport := q.Get("transport")
	if !slices.Contains(s.opts.Transports, transport) {
		refuse(w, r, codeUnknownTransport, "")
		return
	}
	if sid := q.Get("sid"); sid != "" {
		s.serveSession(w, r, sid, transport, upgrade)
		return
	}
	switch {
	case r.Method != http.MethodGet:
		refuse(w, r, codeBadHandshake, "")
	case transport == WebSocket && !upgrade:
		refuse(w, r, codeBadRequest, "")
	case s.opts.Origins != nil && !slices.Contains(s.opts.Origins, r.Header.Get("Origin")) && !s.allowed(r.Header.Get("Origin")):
		refuse(w, r, codeForbidden, fmt.Sprintf("origin %q is not allowed (-origin)", r.Header.Get("Origin")))
	case q.Get("EIO") != "4" && !s.opts.AllowEIO3:
		if s.opts.Hooks.Unsupported != nil {
			s.opts.Hooks.Unsupported(r)
		}
		refuse(w, r, codeUnsupported, "")
	case transport == WebSocket:
		s.openWebSocket(w, r)
	default:
		s.openPolling(w, r)
	}
}

// serveSession serves a request of an existing session.
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request, sid, transport string, upgrade bool) {
	v, ok := s.conns.Load(sid)
	if !ok {
		if s.opts.Hooks.UnknownSid != nil {
			s.opts.Hooks.UnknownSid()
		}
		refuse(w, r, codeUnknownSid, "")
		return
	}
	c := v.(*Conn)
	if c.expired() {
		// Closed, or its ping timeout is due: on Node the session would
		// be gone, and so is it here, though the timer has not run yet
		// (terminate keeps the reason of a session already closed).
		c.terminate("ping timeout")
		if s.opts.Hooks.UnknownSid != nil {
			s.opts.Hooks.UnknownSid()
		}
		refuse(w, r, codeUnknownSid, "")
		return
	}
	switch {
	case upgrade && transport == WebSocket:
		c.upgradeTo(w, r)
	case transport != Polling:
		refuse(w, r, codeBadRequest, "")
	case r.Method == http.MethodGet:
		c.servePoll(w, r)
	case r.Method == http.MethodPost:
		c.servePost(w, r)
	default:
		refuse(w, r, codeBadRequest, "")
	}
}

// TransportError ends session sid as a failed request of its transport
// ends it ("transport error"): its POST's body was cut or timed out. An
// unknown sid is ignored.
func (s *Server) TransportError(sid string) {
	if v, ok := s.conns.Load(sid); ok {
		v.(*Conn).terminate("transport error")
	}
}

// cors writes the CORS headers Node's socket.io gives with
// {origin: "*" or the list, credentials: true}, and answers a preflight.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	origin := r.Header.Get("Origin")
	switch {
	case s.allowed(origin) || s.opts.Origins != nil && slices.Contains(s.opts.Origins, origin):
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
	case s.opts.Origins == nil:
		h.Set("Access-Control-Allow-Origin", "*")
		if s.opts.AllowOrigin != nil {
			h.Add("Vary", "Origin")
		}
	default:
		h.Add("Vary", "Origin")
	}
	h.Set("Access-Control-Allow-Credentials", "true")
	if r.Method != http.MethodOptions {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET,HEAD,PUT,PATCH,POST,DELETE")
	if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
		h.Set("Access-Control-Allow-Headers", asked)
		h.Add("Vary", "Access-Control-Request-Headers")
	}
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// allowed reports whether AllowOrigin accepts origin.
func (s *Server) allowed(origin string) bool {
	return origin != "" && s.opts.AllowOrigin != nil && s.opts.AllowOrigin(origin)
}

// openPacket is the open packet of a new session.
func (s *Server) openPacket(sid string, upgrades bool) []byte {
	ups := "[]"
	if upgrades && slices.Contains(s.opts.Transports, WebSocket) {
		ups = `["websocket"]`
	}
	return fmt.Appendf(nil, `0{"sid":"%s","upgrades":%s,"pingInterval":%d,"pingTimeout":%d,"maxPayload":%d}`,
		sid, ups, s.opts.PingInterval.Milliseconds(), s.opts.PingTimeout.Milliseconds(), s.opts.MaxPayload)
}

// register makes a session for an open request.
func (s *Server) register(r *http.Request, transport string, timers timerSource) *Conn {
	c := newConn(s, transport, timers)
	// Node takes every EIO but 4 for v3.
	c.eio3 = r.URL.Query().Get("EIO") != "4"
	s.conns.Store(c.id, c)
	s.count.Add(1)
	if s.opts.Hooks.Opened != nil {
		s.opts.Hooks.Opened(c, r)
	}
	c.start()
	return c
}

// Conns calls fn for every session held.
func (s *Server) Conns(fn func(*Conn)) {
	s.conns.Range(func(_, v any) bool {
		fn(v.(*Conn))
		return true
	})
}

// CloseLinger is how long a shutdown lets clients that were sent a
// DISCONNECT leave on their own (socket.io-client closes its session as
// soon as it reads one) before it closes the sessions left: a client that
// reads the DISCONNECT and the end of its transport together may report
// the latter ("transport close"), and one on a loaded machine (a load
// test's) can take hundreds of milliseconds to read it.
const CloseLinger = time.Second

// Close tells every socket (a Socket.IO DISCONNECT), lets the clients
// leave for up to CloseLinger, then closes every session left once what it
// has queued is written (a polling session with nothing queued and no
// long-poll at once), and waits for them until ctx is done; then the rest
// are dropped.
func (s *Server) Close(ctx context.Context) {
	s.closed.Store(true)
	s.Conns(func(c *Conn) { c.DisconnectSockets() })
	linger, cancel := context.WithTimeout(ctx, CloseLinger)
	s.wait(linger)
	cancel()
	s.Conns(func(c *Conn) { c.discard() })
	s.wait(ctx)
	s.Conns(func(c *Conn) { c.terminate("forced close") })
}

// wait waits until no session is held or ctx is done.
func (s *Server) wait(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.count.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Package socketio is the Socket.IO target (variants empty, async and
// blocking) on one of two engines (-engine): github.com/zishang520/socket.io
// v3, the default, or the project's own, servers/sioengine (native.go,
// native_events.go, native_cluster.go). What a client sees is written once
// for both engines (behaviour.go): the connect models, in which alone the
// three variants differ, the events and their answers, the known-bad
// modes and the counts; each engine adapts its sockets and arguments to it
// (events.go, native_events.go).
//
// With -redis, the replica (on either engine) joins a cluster through the
// adapters of servers/internal/cluster/sioredis, wire-compatible with Node's
// @socket.io/redis-adapter: broadcasts reach the sockets of every
// replica, knowngood or Node, and a broadcast's ack carries the
// cluster-wide count, after at most sioredis.CountTimeout (1 s; servers
// that did not answer by then are left out of it). Without -redis nothing
// waits on anything but this replica.
//
// With -admin-ui a target of either engine also serves the /admin
// namespace of the official Socket.IO Admin UI, as Node's
// instrument(io, {auth: false}) does (adminui.go).
//
// What a client sees (the events, the connect models and their curve, the
// library problems corrected here) is in servers/README.md.
package socketio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zishang520/socket.io/parsers/engine/v3/packet"
	"github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/servers/engine/v3/transports"
	"github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
	"github.com/zishang520/socket.io/v3/pkg/utils"

	"github.com/knowngood/knowngood/servers/internal/adminui"
	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/cluster/sioredis"
	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/sioengine"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Mode is a connect model: how the namespace middleware spends -delay.
type Mode string

// The three connect models (servers/README.md, "The three connect models",
// says how each spends -delay).
const (
	Empty    Mode = "empty"
	Async    Mode = "async"
	Blocking Mode = "blocking"
)

// Server is one Socket.IO target.
type Server struct {
	cfg    Options
	m      *metrics.Metrics
	log    *slog.Logger
	io     *socket.Server
	http   *http.Server
	gate   *conns.Gate
	faults *faults.Injector
	loop   *loop // the blocking model's one shared loop; nil otherwise
	freeze *freezer
	closed atomic.Bool
	// sessions maps an Engine.IO session id to its *session.
	sessions sync.Map
	// redis joins the replica to a cluster (-redis); nil without.
	redis []*cluster.Redis
	// counts tracks the cluster-wide counts that acks wait for.
	counts sync.WaitGroup
	// eio3Refused logs the first Engine.IO v3 client refused (-allow-eio3).
	eio3Refused sync.Once
	// b serves the events, as the native engine's does.
	b *behaviour[*socket.Socket, []any]
	// push is the timed push (-push-interval, POST /control/push), on
	// either engine (push.go).
	push pushControl
	// admin serves the Socket.IO Admin UI (-admin-ui); nil without.
	admin *zishangAdmin
	// native is the target on the project's own engine (-engine native);
	// nil on zishang520, whose fields are the rest.
	native *native
}

// session follows one Engine.IO session from its open request to its first
// namespace CONNECT ack, which is the handshake the metrics time.
type session struct {
	conn engine.Socket
	// sockets are its namespace sockets, the latest by namespace, for a
	// drop that disconnects them (drop.go).
	socketsMu sync.Mutex
	sockets   map[string]*socket.Socket
	start     time.Time
	transport string
	claimed   atomic.Bool // an Engine.IO socket was made for this request
	settled   atomic.Bool // the handshake's result has been counted
	release   sync.Once   // gives the -max-conns place back
	// ackedAfter is how long after start the first CONNECT ack was
	// created (ns), 0 before: the close that follows at once may be
	// handled before onConnect counts the handshake.
	ackedAfter atomic.Int64
	// registering counts CONNECT acks written whose namespace socket the
	// library has not registered yet (see holdUntilRegistered).
	registering atomic.Int32
	// registered, made by a packet that waits in holdUntilRegistered, is
	// closed when registering comes back to 0 (under mu).
	registered chan struct{}
	// queued counts packets created but not yet handed to the transport.
	queued atomic.Int64
	// refused is set when the server answered a CONNECT with CONNECT_ERROR
	// (an unknown namespace, a middleware error).
	refused atomic.Bool
	// upgrades counts WebSocket upgrade requests of the session that the
	// engine is handling, and upgradeRead is set once the client's upgrade
	// packet has been read (see pollAfterUpgrade).
	upgrades    atomic.Int32
	upgradeRead atomic.Bool
	// pingTimeoutTimer reads the engine's ping timeout timer; pingPending
	// and timerBeforePing follow the ping the client has to answer (see
	// pongAfterPing).
	pingTimeoutTimer func() *utils.Timer
	pingPending      atomic.Bool
	timerBeforePing  atomic.Pointer[utils.Timer]
	// serverClosed is set when the server began to close the session
	// (see closingPolling).
	serverClosed atomic.Bool
	// mu guards registered.
	mu sync.Mutex
	// turns holds the blocking model's pending connects, and slot the
	// turn its read or request holds on the loop.
	turns connectTurns[*socket.ExtendedError]
	slot  *turnSlot
	// kind tells the Admin UI's session (-admin-ui) from a user's.
	kind sessionKind
}

type sessionKey struct{}

// New builds a Socket.IO target with the given connect model.
func New(mode Mode, cfg Options, m *metrics.Metrics, log *slog.Logger) (*Server, error) {
	s, err := newOnEngine(mode, cfg, m, log)
	if err != nil {
		return nil, err
	}
	event := cfg.PushEvent
	servers := s.redis
	if s.native != nil {
		servers = s.native.redis
	}
	inCluster := len(servers) > 0
	send := func(room string, seq uint64, filler string) { s.b.push(event, room, seq, filler, inCluster) }
	if s.native != nil {
		send = func(room string, seq uint64, filler string) { s.native.b.push(event, room, seq, filler, inCluster) }
	}
	s.push = pushControl{cfg: cfg, send: send}
	if inCluster {
		// The lease and the counter on the first Redis: with several
		// (rooms sharded), every replica dials the same first one.
		s.push.lease = clusterLease(servers[0], event, log)
	}
	return s, nil
}

// newOnEngine builds the target on the engine -engine names.
func newOnEngine(mode Mode, cfg Options, m *metrics.Metrics, log *slog.Logger) (*Server, error) {
	if cfg.Native() {
		return newNative(mode, cfg, m, log)
	}
	s := &Server{cfg: cfg, m: m, log: log, gate: conns.NewGate(cfg.MaxConns), faults: faults.New(cfg.Faults, m)}
	s.b = &behaviour[*socket.Socket, []any]{eng: zishang{s}, m: m, faults: s.faults, emitAuth: cfg.EmitAuth, ackDelay: cfg.AckDelay, recovery: cfg.Recovery > 0}
	if mode == Blocking {
		s.loop = newLoop(cfg.BlockingModel)
		s.freeze = newFreezer(s.loop, cfg.MaxPayload, func(r *http.Request) { openLeft(m, cfg, r) })
	}
	// The delay lives in the namespace middleware (io.Use), because
	// zishang520/socket.io writes the CONNECT ack before
	// io.On("connection") fires: a delay placed there would never be seen
	// by a client. The library's reader goroutine only queues.
	middleware, err := connectModel(mode, cfg.Delay, s.takeTurn)
	if err != nil {
		return nil, err
	}

	opts := socket.DefaultServerOptions()
	opts.SetPingInterval(cfg.PingInterval)
	opts.SetPingTimeout(cfg.PingTimeout)
	opts.SetMaxHttpBufferSize(cfg.MaxPayload)
	opts.SetConnectTimeout(cfg.ConnectTimeout)
	opts.SetServeClient(false)
	opts.SetAllowEIO3(cfg.AllowEIO3)
	opts.SetTransports(s.transportSet(cfg.Transports))
	opts.SetCors(&types.Cors{Origin: corsOrigin(cfg.Origins, cfg.AdminUI), Credentials: true})
	if len(cfg.Origins) > 0 {
		opts.SetAllowRequest(func(ctx *types.HttpContext) error {
			if origin := ctx.Headers().Peek("Origin"); !s.originAllowed(origin) {
				return fmt.Errorf("origin %q is not allowed (-origin)", origin)
			}
			return nil
		})
	}
	if cfg.Recovery > 0 {
		// The library's session-aware adapter, a port of Node's: what it
		// keeps is bounded by the window alone, as on Node. Its restore
		// loses a broadcast sent while the socket is built (recovery.go).
		rec := socket.DefaultConnectionStateRecovery()
		rec.SetMaxDisconnectionDuration(cfg.Recovery.Milliseconds())
		rec.SetSkipMiddlewares(true)
		opts.SetConnectionStateRecovery(rec)
		opts.SetAdapter(restoringAdapters{})
	}
	if cfg.Compression {
		opts.SetPerMessageDeflate(&types.PerMessageDeflate{Threshold: 1024})
	}

	if cfg.Redis != "" {
		if s.redis, err = dialRedis(cfg, m, log); err != nil {
			s.loop.stop()
			return nil, err
		}
		opts.SetAdapter(sioredis.NewBuilder(clusterOptions(s.redis, m, log)))
	}

	s.io = socket.NewServer(nil, opts)
	// ServeHandler creates the engine, so it comes before io.Engine().
	eio := s.io.ServeHandler(nil)
	prependListener(s.io.Engine(), "connection", func(args ...any) { s.onEngineOpen(args[0].(engine.Socket)) })
	// The engine tells its server of every session's flush too: one
	// listener here instead of one more on every session (each costs the
	// library's emitter several allocations).
	s.io.Engine().On("flush", func(args ...any) { s.onFlush(args) })
	s.countUnknownSid()
	if cfg.AdminUI != nil {
		s.instrument()
	}
	nsps := []socket.Namespace{s.io.Of("/", nil)}
	for _, name := range namespacesOf(cfg) {
		nsps = append(nsps, s.io.Of(name, nil))
	}
	if cfg.Namespaces == nil {
		// Any other namespace, made on its first CONNECT as Node's
		// io.of(/.*/) makes it, up to config.MaxNamespaces: each is held
		// until the target ends. Its children take the parent's middleware
		// and listeners.
		var made atomic.Int32
		match := func(_ string, _ map[string]any, next func(error, bool)) {
			next(nil, made.Add(1) <= config.MaxNamespaces)
		}
		nsps = append(nsps, s.io.Of(socket.ParentNspNameMatchFn(&match), nil))
	}
	for _, nsp := range nsps {
		if middleware != nil {
			nsp.Use(middleware)
		}
		nsp.On("connection", func(args ...any) { s.onConnect(args[0].(*socket.Socket)) })
	}

	mux := http.NewServeMux()
	mux.Handle(cfg.Path, wholeBody(cfg.MaxPayload, s.transportError,
		interop(s.faults, cfg.MaxPayload, m, s.freeze.handler(s.track(eio)))))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "knowngood "+cfg.Name+": Socket.IO is served at "+cfg.Path+" (-path)", http.StatusNotFound)
	})
	s.http = lifecycle.HTTPServer(cfg.HTTP, nil, log)
	s.http.Handler = (&unfinished{m: m}).install(s.http, mux)
	return s, nil
}

func (s *Server) transportSet(names []string) *types.Set[transports.TransportCtor] {
	set := types.NewSet[transports.TransportCtor]()
	for _, name := range names {
		switch name {
		case transports.POLLING:
			set.Add(pollingTransport{s})
		case transports.WEBSOCKET:
			set.Add(webSocketTransport{s})
		}
	}
	return set
}

// originAllowed: any Origin without -origin, one of its values with it,
// and with -admin-ui the admin listener's.
func (s *Server) originAllowed(origin string) bool {
	return len(s.cfg.Origins) == 0 || slices.Contains(s.cfg.Origins, origin) || s.cfg.AdminUI.AllowsOrigin(origin)
}

// corsOrigin is the library's CORS origin option: "*" without -origin (the
// library then names the request's origin, as credentials need), or
// -origin's values, and with -admin-ui the admin listener's origin.
func corsOrigin(origins []string, ui *adminui.Link) any {
	if len(origins) == 0 {
		return "*"
	}
	if ui == nil {
		return origins
	}
	allowed := []any{func(origin string) bool { return ui.AllowsOrigin(origin) }}
	for _, o := range origins {
		allowed = append(allowed, o)
	}
	return allowed
}

// AdminUI is the Link the admin listener serves the Socket.IO Admin
// UI's page with (-admin-ui); nil without.
func (s *Server) AdminUI() *adminui.Link {
	if s.native != nil {
		return s.native.cfg.AdminUI
	}
	return s.cfg.AdminUI
}

// track wraps the Engine.IO handler. A request without a sid opens a new
// session: it takes a -max-conns place (or gets 503 before any upgrade) and
// starts the handshake clock. The engine sees only the headers it reads
// (leanHeader).
func (s *Server) track(eio http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leanHeader(r)
		query := r.URL.Query()
		if sid := query.Get("sid"); sid != "" {
			s.serveInOrder(eio, w, r, sid, query.Get("transport"))
			return
		}
		if r.Method == http.MethodOptions {
			eio.ServeHTTP(w, r)
			return
		}
		transport := query.Get("transport")
		if !slices.Contains(s.cfg.Transports, transport) {
			transport = "invalid"
		}
		if s.closed.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		if s.refusesEIO3(r, transport) {
			s.refuseEIO3(w, r, transport)
			return
		}
		if !admitOpen(w, transport, s.faults, s.gate, s.m, s.cfg.MaxConns) {
			return
		}
		sess := &session{start: time.Now(), transport: transport}
		eio.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
		if !sess.claimed.Load() {
			// The engine refused the request (bad EIO, method, transport...).
			sess.release.Do(s.gate.Release)
			s.m.Handshake(protocol.ResultFailed, transport, 0)
		}
	})
}

// onEngineOpen runs when the engine has made a session for an open request.
func (s *Server) onEngineOpen(conn engine.Socket) {
	sess, ok := conn.Request().Request().Context().Value(sessionKey{}).(*session)
	if !ok {
		// Not through track (cannot happen with our mux); count it anyway.
		sess = &session{start: time.Now(), transport: conn.Transport().Name()}
		s.gate.TryAcquire()
	}
	sess.claimed.Store(true)
	s.m.Opened()
	sess.pingTimeoutTimer = pingTimeoutTimerOf(conn)
	// Remember the session for onConnect, which sees only the socket, for
	// onFlush, and for Shutdown: before the first packet that onFlush
	// counts can be created.
	sess.conn = conn
	id := conn.Id()
	sess.slot = s.freeze.bind(string(id), conn.Request().Request())
	s.sessions.Store(id, sess)
	conn.On("packet", func(args ...any) {
		if p, ok := args[0].(*packet.Packet); ok && p.Type == packet.PONG {
			sess.pongAfterPing()
		}
		data, text := messageData(args)
		if !s.admin.packetIn(sess, data, text) {
			s.m.Received(0, len(data))
		}
		switch {
		case len(data) == 0:
		case text && data[0] == socketIOConnect:
			sess.writtenBeforeConnect()
		default:
			sess.holdUntilRegistered()
		}
	})
	conn.On("packetCreate", func(args ...any) {
		sess.queued.Add(1)
		if p, ok := args[0].(*packet.Packet); ok && p.Type == packet.PING {
			sess.pingCreated()
		}
		data, text := messageData(args)
		if !s.admin.packetOut(sess, data) {
			s.m.Sent(0, len(data))
		}
		switch {
		case len(data) == 0 || !text: // a binary attachment may start with any byte
		case data[0] == socketIOConnect:
			sess.ackedAfter.CompareAndSwap(0, int64(time.Since(sess.start)))
			sess.registering.Add(1) // onConnect takes it back
		case data[0] == socketIOConnectError:
			sess.refused.Store(true)
		}
	})
	s.admin.opened(conn, sess)
	conn.Once("close", func(args ...any) {
		s.sessions.Delete(id)
		s.freeze.unbind(string(id))
		reason, _ := args[0].(string)
		sess.release.Do(s.gate.Release)
		if s.admin.closed(sess, reason) {
			return // the Admin UI's session: counted in no figure but connections_total
		}
		if took := time.Duration(sess.ackedAfter.Load()); took != 0 {
			// The ack was made: the handshake completed, even if the
			// client read it and left before onConnect ran.
			settleHandshake(s.m, &sess.settled, sess.transport, took, sess.slot.goneBeforeAnswer())
		} else if sess.settled.CompareAndSwap(false, true) {
			result := unfinishedResult(reason)
			if sess.serverClosed.Load() {
				result = protocol.ResultFailed
			}
			if sess.refused.Load() {
				result = protocol.ResultRejected
			}
			s.m.Handshake(result, sess.transport, 0)
		}
		// Last: a client that waits for connections_active to fall finds
		// the handshake's result and the disconnect counted.
		s.m.Closed(reason)
	})
}

// onFlush follows a session's packets as the engine hands them to the
// transport (see delivered).
func (s *Server) onFlush(args []any) {
	if len(args) < 2 {
		return
	}
	conn, ok := args[0].(engine.Socket)
	packets, ok2 := args[1].([]*packet.Packet)
	if !ok || !ok2 {
		return
	}
	if v, ok := s.sessions.Load(conn.Id()); ok {
		v.(*session).queued.Add(-int64(len(packets)))
	}
}

// unfinishedResult names a session that closed before any CONNECT ack: the
// client left (abandoned) or the server gave up on it (failed: the connect
// timeout, a parse error, shutdown). One whose CONNECT was refused with a
// CONNECT_ERROR counts as rejected instead.
func unfinishedResult(reason string) string {
	switch reason {
	case "transport close", "transport error", "ping timeout":
		return protocol.ResultAbandoned
	}
	return protocol.ResultFailed
}

// The first byte of a Socket.IO CONNECT and CONNECT_ERROR packet.
const (
	socketIOConnect      = '0'
	socketIOConnectError = '4'
)

// messageData is the payload of an Engine.IO message packet (a Socket.IO
// packet, which is text, or a binary attachment), without consuming it, and
// whether it is text; nil for pings, pongs and the rest.
func messageData(args []any) (data []byte, text bool) {
	p, ok := args[0].(*packet.Packet)
	if !ok || p.Type != packet.MESSAGE {
		return nil, false
	}
	if buf, ok := p.Data.(types.BufferInterface); ok {
		_, text = p.Data.(*types.StringBuffer)
		return buf.Bytes(), text
	}
	return nil, false
}

// admitOpen refuses with 503, counting a rejected handshake, a request
// that opens a session when -fault-reject picks it or -max-conns is
// reached. Otherwise it takes a place under -max-conns, which the caller
// gives back if no session opens; transport is the one the request names.
func admitOpen(w http.ResponseWriter, transport string, f *faults.Injector, gate *conns.Gate, m *metrics.Metrics, maxConns int) bool {
	switch {
	case f.Reject():
		m.Handshake(protocol.ResultRejected, transport, 0)
		http.Error(w, "fault injected (-fault-reject)", http.StatusServiceUnavailable)
		return false
	case !gate.TryAcquire():
		m.Handshake(protocol.ResultRejected, transport, 0)
		m.CapRefused()
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("connection cap reached (-max-conns %d)", maxConns), http.StatusServiceUnavailable)
		return false
	}
	return true
}

// Serve serves until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if s.push.cfg.PushInterval > 0 {
		_, _ = s.SetPush(control.Push{On: true})
	}
	if s.native != nil {
		return s.native.Serve(ln)
	}
	return serveHTTP(s.http, ln, s.cfg, s.m)
}

// serveHTTP serves h on ln until Shutdown, which is not an error.
func serveHTTP(h *http.Server, ln net.Listener, cfg Options, m *metrics.Metrics) error {
	if err := lifecycle.ServeHTTP(h, ln, cfg.HTTP.Body, m, metrics.ListenerTarget); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown refuses new sessions and tells every client: each namespace
// socket gets a Socket.IO DISCONNECT, and once every session has handed what
// it had to its transport and the WebSocket writes are done (or half of the
// time left has passed), and the clients have had sioengine.CloseLinger to
// leave on their own, every session left is closed. The library's own
// close would drop what a WebSocket still has queued, hence the wait.
func (s *Server) Shutdown(ctx context.Context) error {
	s.push.shutdown()
	s.admin.close()
	if s.native != nil {
		return s.native.Shutdown(ctx)
	}
	s.closed.Store(true)
	s.loop.stop()
	grace := 2 * time.Second
	if deadline, ok := ctx.Deadline(); ok {
		grace = time.Until(deadline) / 2
	}
	// The library writes a CONNECT's ack before it registers the socket
	// (onConnect): a client that has its ack may not be in its session's
	// sockets yet, and would be left out of the DISCONNECTs.
	waitUntil(grace, s.registered)
	// Every session's sockets, in whichever namespaces its client made.
	s.sessions.Range(func(_, v any) bool {
		for _, sock := range v.(*session).namespaceSockets() {
			sock.Disconnect(false)
		}
		return true
	})
	began := time.Now()
	waitUntil(grace, s.delivered)
	waitUntil(min(sioengine.CloseLinger, grace-time.Since(began)), s.noSession)
	s.io.Close(nil) // closes the namespaces' adapters too
	s.counts.Wait() // ended by the adapters' close, if not before
	closeRedis(s.redis)
	// Every session is closed now, but the library can leave a polling GET
	// that arrived while its session was closing waiting for a response that
	// will not come; http.Server.Shutdown would wait for it until the
	// deadline. Close cancels such requests.
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if err := s.http.Shutdown(hctx); err != nil {
		s.log.Debug("closing requests left after shutdown", "err", err)
		_ = s.http.Close()
	}
	return ctx.Err()
}

// RedisState is "up" or "down" with -redis, "" without; with several
// Redis servers, "down" when any of them is.
func (s *Server) RedisState() string {
	if s.native != nil {
		return redisState(s.native.redis)
	}
	return redisState(s.redis)
}

func redisState(servers []*cluster.Redis) string {
	if servers == nil {
		return ""
	}
	for _, r := range servers {
		if !r.Up() {
			return r.RedisState()
		}
	}
	return "up"
}

// dialRedis connects to every -redis URL: several spread the rooms over
// them by hash (sioredis).
func dialRedis(cfg Options, m *metrics.Metrics, log *slog.Logger) ([]*cluster.Redis, error) {
	var servers []*cluster.Redis
	for _, url := range strings.Split(cfg.Redis, ",") {
		r, err := cluster.Dial(url, m, log)
		if err != nil {
			closeRedis(servers)
			return nil, fmt.Errorf("-redis: %w", err)
		}
		servers = append(servers, r)
	}
	return servers, nil
}

// clusterOptions are the adapters' options on either engine: a broadcast
// from another server counts as sent to each socket it reached here.
func clusterOptions(servers []*cluster.Redis, m *metrics.Metrics, log *slog.Logger) sioredis.Options {
	return sioredis.Options{Redis: servers[0], Shards: servers, Metrics: m, Log: log,
		Delivered: func(n int) { m.Sent(n, 0) }}
}

// closeRedis closes every Redis client.
func closeRedis(servers []*cluster.Redis) {
	for _, r := range servers {
		_ = r.Close()
	}
}

// delivered reports whether every session has written what it queued.
func (s *Server) delivered() bool { return s.everySession((*session).written) }

// registered reports whether every CONNECT acked so far has its socket
// registered.
func (s *Server) registered() bool {
	return s.everySession(func(ss *session) bool { return ss.registering.Load() <= 0 })
}

// noSession reports whether every session has ended.
func (s *Server) noSession() bool {
	return s.everySession(func(*session) bool { return false })
}

// everySession reports whether ok holds for every session, stopping at
// the first that fails it.
func (s *Server) everySession(ok func(*session) bool) bool {
	all := true
	s.sessions.Range(func(_, v any) bool {
		all = ok(v.(*session))
		return all
	})
	return all
}

// waitUntil polls cond every 10 ms for at most d.
func waitUntil(d time.Duration, cond func() bool) {
	for end := time.Now().Add(d); !cond() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
}

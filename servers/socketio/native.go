package socketio

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/sioengine"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// native is the target on the project's own engine (-engine native),
// servers/sioengine: the same connect models, events, accounting and
// shutdown as the zishang520 target.
type native struct {
	cfg    Options
	m      *metrics.Metrics
	log    *slog.Logger
	eng    *sioengine.Server
	http   *http.Server
	loops  lifecycle.Target // -engine native-gnet (nativegnet.go); nil on net/http
	gate   *conns.Gate
	faults *faults.Injector
	b      *behaviour[*sioengine.Socket, nativeArgs] // serves the events
	loop   *loop
	freeze *freezer
	closed atomic.Bool
	// redis and adapters join the replica to a cluster (-redis); nil
	// without. counts tracks the cluster-wide counts acks wait for.
	redis    []*cluster.Redis
	adapters sync.Map // namespace name -> *sioredis.Native
	counts   sync.WaitGroup
	// eio3Refused logs the first Engine.IO v3 client refused (-allow-eio3).
	eio3Refused sync.Once
	// admin serves the Socket.IO Admin UI (-admin-ui); nil without.
	admin *nativeAdmin
}

// nativeSession follows one Engine.IO session from its open request to
// its first CONNECT ack (the handshake the metrics time).
type nativeSession struct {
	start     time.Time
	transport string
	claimed   atomic.Bool         // the engine made a session for the request
	settled   atomic.Bool         // the handshake's result has been counted
	release   sync.Once           // gives the -max-conns place back
	refused   atomic.Bool         // answered a CONNECT_ERROR
	events    faults.Count        // counted for -fault-close-after
	turns     connectTurns[error] // the blocking model's pending connects
	slot      *turnSlot           // the turn its read or request holds on the loop
	// kind tells the Admin UI's session from a user's, and handshake is
	// its open request as the Admin UI lists it (-admin-ui).
	kind      sessionKind
	handshake *nativeHandshake
}

func newNative(mode Mode, cfg Options, m *metrics.Metrics, log *slog.Logger) (*Server, error) {
	if mode == Blocking && cfg.Engine == config.EngineNativeGnet {
		// The blocking model freezes one loop of its own; gnet's event
		// loops serve many connections each and must never block.
		return nil, errors.New("-engine native-gnet cannot serve the blocking variant, whose connects freeze the server's one loop: use -engine native")
	}
	n := &native{cfg: cfg, m: m, log: log, gate: conns.NewGate(cfg.MaxConns), faults: faults.New(cfg.Faults, m)}
	n.b = &behaviour[*sioengine.Socket, nativeArgs]{eng: nativeBackend{n}, m: m, faults: n.faults, emitAuth: cfg.EmitAuth, ackDelay: cfg.AckDelay, recovery: cfg.Recovery > 0}
	connecting, err := connectModel(mode, cfg.Delay, n.takeTurn)
	if err != nil {
		return nil, err
	}
	if mode == Blocking {
		n.loop = newLoop(cfg.BlockingModel)
		n.freeze = newFreezer(n.loop, cfg.MaxPayload, func(r *http.Request) { openLeft(m, cfg, r) })
	}
	opts := sioengine.Options{
		PingInterval: cfg.PingInterval, PingTimeout: cfg.PingTimeout, ConnectTimeout: cfg.ConnectTimeout,
		MaxPayload: cfg.MaxPayload, Transports: engineTransports(cfg), Origins: cfg.Origins,
		Compression: cfg.Compression, HandshakeTimeout: cfg.HTTP.Header,
		Namespaces: namespacesOf(cfg), AnyNamespace: cfg.Namespaces == nil, MaxNamespaces: config.MaxNamespaces,
		AllowEIO3: cfg.AllowEIO3, Recovery: cfg.Recovery,
		Hooks: sioengine.Hooks{
			Opened:        n.opened,
			Closed:        n.closedSession,
			Connecting:    connecting,
			Connected:     n.connected,
			Refused:       func(c *sioengine.Conn) { c.Data.(*nativeSession).refused.Store(true) },
			NamespaceMade: n.namespaceMade,
			Event:         n.event,
			Received:      func(_ *sioengine.Conn, data []byte, _ bool) { m.Received(0, len(data)) },
			Sent:          func(_ *sioengine.Conn, b int) { m.Sent(0, b) },
			UnknownSid:    func() { m.Refused(ReasonUnknownSid) },
			Evicted:       func(kind string) { m.Recovery("evicted_" + kind) },
			Unsupported: func(r *http.Request) {
				n.eio3Refused.Do(func() { logEIO3Refused(log, r) })
			},
		},
	}
	if cfg.AdminUI != nil {
		n.instrument(&opts)
	}
	n.eng = sioengine.New(opts)
	if cfg.Redis != "" {
		if err := n.joinCluster(); err != nil {
			n.loop.stop()
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.Handle(cfg.Path, wholeBody(cfg.MaxPayload, n.eng.TransportError,
		interop(n.faults, cfg.MaxPayload, m, n.freeze.handler(http.HandlerFunc(n.track)))))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "knowngood "+cfg.Name+": Socket.IO is served at "+cfg.Path+" (-path)", http.StatusNotFound)
	})
	if cfg.Engine == config.EngineNativeGnet {
		return n.onLoops(mux)
	}
	n.http = lifecycle.HTTPServer(cfg.HTTP, nil, log)
	n.http.Handler = (&unfinished{m: m}).install(n.http, mux)
	return &Server{native: n}, nil
}

// track admits an open request (shutdown, -fault-reject, -max-conns) and
// starts its handshake clock; the engine does the rest.
func (n *native) track(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	if query.Get("sid") != "" || r.Method == http.MethodOptions {
		n.eng.ServeHTTP(w, r)
		return
	}
	transport := query.Get("transport")
	if !slices.Contains(n.cfg.Transports, transport) {
		transport = "invalid"
	}
	if n.closed.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	if !admitOpen(w, transport, n.faults, n.gate, n.m, n.cfg.MaxConns) {
		return
	}
	sess := &nativeSession{start: time.Now(), transport: transport}
	n.eng.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	if !sess.claimed.Load() {
		sess.release.Do(n.gate.Release) // the engine refused the request
		n.m.Handshake(protocol.ResultFailed, transport, 0)
	}
}

func (n *native) opened(c *sioengine.Conn, r *http.Request) {
	sess, ok := r.Context().Value(sessionKey{}).(*nativeSession)
	if !ok { // not through track (cannot happen with this mux)
		sess = &nativeSession{start: time.Now(), transport: c.Transport()}
		n.gate.TryAcquire()
	}
	sess.claimed.Store(true)
	sess.slot = n.freeze.bind(c.ID(), r)
	c.Data = sess
	n.m.Opened()
}

func (n *native) closedSession(c *sioengine.Conn, reason string) {
	sess := c.Data.(*nativeSession)
	n.freeze.unbind(c.ID())
	sess.release.Do(n.gate.Release)
	if at := c.AckedAt(); !at.IsZero() {
		// The ack was queued, and on gnet written, before the Connected
		// hook that counts it ran: the client may have read it and left
		// first. Its handshake completed all the same.
		settleHandshake(n.m, &sess.settled, sess.transport, at.Sub(sess.start), sess.slot.goneBeforeAnswer())
	} else if sess.settled.CompareAndSwap(false, true) {
		result := unfinishedResult(reason)
		if c.ServerClosed() {
			result = protocol.ResultFailed
		}
		if sess.refused.Load() {
			result = protocol.ResultRejected
		}
		n.m.Handshake(result, sess.transport, 0)
	}
	n.m.Closed(reason)
}

// connected: the CONNECT ack is queued; the first of a session ends its
// handshake.
func (n *native) connected(s *sioengine.Socket) {
	sess := s.Conn().Data.(*nativeSession)
	n.freeze.settle(sess.slot, func(gone bool) { settleHandshake(n.m, &sess.settled, sess.transport, time.Since(sess.start), gone) })
	n.b.connected(s, s, func() nativeArgs { return nativeArgs{vals: []json.RawMessage{s.Auth()}} })
}

// Serve and Shutdown are the Server's with -engine native.
func (n *native) Serve(ln net.Listener) error {
	if n.loops != nil {
		return n.loops.Serve(ln)
	}
	return serveHTTP(n.http, ln, n.cfg, n.m)
}

// Shutdown refuses new sessions, sends every socket a DISCONNECT, closes
// each session once it has written what it had queued (within half the
// time left), then ends the HTTP server.
func (n *native) Shutdown(ctx context.Context) error {
	n.closed.Store(true)
	n.admin.close()
	n.loop.stop()
	grace := 2 * time.Second
	if deadline, ok := ctx.Deadline(); ok {
		grace = time.Until(deadline) / 2
	}
	ectx, cancel := context.WithTimeout(ctx, grace)
	n.eng.Close(ectx)
	cancel()
	n.leaveCluster()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if n.loops != nil {
		_ = n.loops.Shutdown(hctx)
		return ctx.Err()
	}
	if err := n.http.Shutdown(hctx); err != nil {
		_ = n.http.Close()
	}
	return ctx.Err()
}

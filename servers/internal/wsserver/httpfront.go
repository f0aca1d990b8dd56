package wsserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// wsConn is a connection that a library has upgraded.
type wsConn interface {
	// serve reads messages for s until the connection ends and returns
	// the disconnect reason (a close code).
	serve(s Session) string
	// write sends one message: from serve's goroutine (a reply) or from
	// the connection's one writer (queue.go), never from both.
	write(op Op, data []byte) error
	// ping sends a ping; it may wait up to timeout (coder waits for the
	// pong). Safe alongside the reader and the writer.
	ping(timeout time.Duration) error
	// close starts the server's close with code. It may be called from
	// any goroutine and may block for a while.
	close(code int)
}

// upgrader upgrades a request that checkUpgrade has passed. On error the
// library has answered the request itself.
type upgrader func(w http.ResponseWriter, r *http.Request, raw *trackedConn, m *metrics.Metrics) (wsConn, error)

// httpTarget serves WebSocket through net/http, which gorilla and coder
// both sit on. It does everything but the upgrade and the read loop: the
// request checks, -max-conns, the handshake accounting, the send queue, and
// shutdown.
type httpTarget struct {
	cfg     Settings
	m       *metrics.Metrics
	log     *slog.Logger
	gate    *conns.Gate
	opts    Options
	upgrade upgrader
	srv     *http.Server
	conns   *conns.Registry[*httpPeer]
	faults  *faults.Injector
	closers sync.WaitGroup // Peer.Close and Shutdown's goodbyes

	listening conns.Listening
}

type connKey struct{}

func newHTTPTarget(cfg Settings, m *metrics.Metrics, log *slog.Logger, o Options, up upgrader) *httpTarget {
	t := &httpTarget{cfg: cfg, m: m, log: log, gate: conns.NewGate(cfg.MaxConns), opts: o, upgrade: up, conns: conns.NewRegistry[*httpPeer](), faults: faults.New(cfg.Faults, m)}
	t.srv = lifecycle.HTTPServer(cfg.HTTP, t, log)
	t.srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	t.srv.ConnState = t.connState
	return t
}

// Serve serves until Shutdown.
func (t *httpTarget) Serve(ln net.Listener) error {
	tl := &trackingListener{Listener: ln}
	if !t.listening.Start(tl) {
		return tl.Close()
	}
	err := lifecycle.ServeHTTP(t.srv, tl, t.cfg.HTTP.Body, t.m, metrics.ListenerTarget)
	if t.listening.Closing() || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeHTTP answers one request on a fresh connection: a refusal, or an
// upgrade. An upgraded connection's read loop runs on a goroutine of its
// own and ServeHTTP returns, so that net/http's state for the connection
// (its conn, the request and its header, the response writer's buffer:
// about 6 KiB) is garbage for the connection's whole life: a hijacked
// connection is not net/http's any more.
func (t *httpTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, ok := r.Context().Value(connKey{}).(*trackedConn)
	if !ok {
		http.Error(w, "not served through Serve", http.StatusInternalServerError)
		return
	}
	defer func() {
		if v := recover(); v != nil {
			conns.LogPanic(t.log, t.cfg.Name, v)
			_ = raw.Close()
		}
	}()
	raw.handled.Store(true)
	if rf := admit(t.listening.Closing(), r, t.cfg, t.gate, t.faults); rf != nil {
		rf.write(w)
		rf.record(t.m)
		return
	}
	// The 101 is held until the handler has opened the session (serve):
	// a client that has read it is a member already.
	raw.holdOpening()
	chosen, offered, _ := subprotocol((*httpHead)(r), t.cfg.Subprotocols)
	if chosen != "" {
		w.Header().Set("Sec-WebSocket-Protocol", chosen)
	}
	ws, err := t.upgrade(w, r, raw, t.m)
	if err != nil {
		_ = raw.openDone() // the library's answer goes out as it is written
		t.gate.Release()
		t.m.Handshake(protocol.ResultFailed, transport, 0)
		return
	}
	t.m.Handshake(protocol.ResultOK, transport, raw.sinceFirstByte())
	countSubprotocol(t.m, chosen, offered)
	t.m.Opened()

	p := newHTTPPeer(t, ws, raw)
	// Added here, before ServeHTTP returns, so that a Shutdown that has
	// begun waits for this connection's read loop too.
	added := t.conns.Add(p)
	go t.serve(p, added)
}

// serve runs one upgraded connection's read loop until it ends.
func (t *httpTarget) serve(p *httpPeer, added bool) {
	reason := "1011" // kept only if a handler panics
	defer func() {
		if v := recover(); v != nil {
			conns.LogPanic(t.log, t.cfg.Name, v)
		}
		p.end()
		if p.halfOpen.Load() {
			reason = reasonPingTimeout
		}
		t.m.Closed(reason)
		t.gate.Release()
		// Last: Shutdown's wait ends when every read loop is done.
		if added {
			t.conns.Remove(p)
		}
	}()
	p.session = t.opts.Handler.Open(p)
	s := (*readerSession)(p)
	defer s.Closed()
	// Only now the 101 goes out, with whatever was written behind it (a
	// close); then the writer sends what was queued since Open.
	_ = p.raw.openDone() // a failed write fails the first read too
	p.startWriter()
	if !added {
		// Shutdown began during the upgrade and will not wait for this
		// connection: say goodbye here, within the deadline.
		_ = p.raw.SetDeadline(time.Now().Add(closeWait))
		p.ws.close(CloseGoingAway)
	}
	p.keepalive(t.cfg.PingInterval, t.cfg.PingTimeout)
	reason = p.ws.serve(s)
}

// connState counts the handshakes that never reached ServeHTTP: the request
// was garbage (net/http answered 400 or 431), timed out (-handshake-timeout),
// or the client left half-way.
func (t *httpTarget) connState(c net.Conn, s http.ConnState) {
	tc, ok := c.(*trackedConn)
	if s != http.StateClosed || !ok || tc.handled.Load() || tc.first.Load() == 0 {
		return
	}
	result := protocol.ResultFailed
	if tc.left.Load() {
		result = protocol.ResultAbandoned
	}
	t.m.Handshake(result, transport, 0)
}

// closeAsync starts the server's close with code on a goroutine of its
// own: the libraries' close calls wait for the write lock, or (coder) for
// the client's answer.
func (t *httpTarget) closeAsync(ws wsConn, code int) {
	t.closers.Go(func() {
		defer func() {
			if v := recover(); v != nil {
				conns.LogPanic(t.log, t.cfg.Name+" close", v)
			}
		}()
		ws.close(code)
	})
}

// Shutdown stops accepting, sends every client 1001, and returns once they
// have gone or ctx is done; the connections left then are dropped.
func (t *httpTarget) Shutdown(ctx context.Context) error {
	if ln := t.listening.Stop(); ln != nil {
		_ = ln.Close()
	}
	goAway := func(p *httpPeer) { t.closeAsync(p.ws, CloseGoingAway) }
	err := conns.Drain(ctx, t.conns, goAway, func(p *httpPeer) { _ = p.raw.Close() })
	// Upgrade requests still being read or answered go too. Hijacked
	// connections are not net/http's any more: Drain has seen to them.
	_ = t.srv.Close()
	t.closers.Wait()
	return err
}

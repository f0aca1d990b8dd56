package wsserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// gnetTarget serves WebSocket on gnet's event loops, with gobwas/ws
// framing. Everything a connection does happens in gnet's callbacks on its
// loop, and none of them blocks: the upgrade request is buffered until it is
// complete, frames are parsed from what has arrived, replies are written
// without waiting.
//
// gnet does not accept connections here. Its acceptor stops the whole
// engine, every connection with it, on any accept error but EAGAIN, EINTR,
// ECONNRESET and ECONNABORTED (gnet v2.9.7 acceptor_unix.go: it returns
// ErrAcceptSocket, which ends the main reactor, which shuts the engine
// down), so a single EMFILE would take the target down. Instead Serve
// accepts on the listener lifecycle opened (same -addr, -backlog and
// SO_REUSEADDR as every target), backs off on errors as net/http does, and
// hands each connection to an event loop with Engine.Register. gnet still
// insists on a listener of its own: it gets one on 127.0.0.1:0 that
// nothing is told about.
type gnetTarget struct {
	gnet.BuiltinEventEngine
	cfg    Settings
	m      *metrics.Metrics
	log    *slog.Logger
	opts   Options
	gate   *conns.Gate
	faults *faults.Injector
	// backlog is how many bytes of replies may wait for a client that does
	// not read them: 16 messages of -max-message, at least 1 MiB.
	backlog int

	eng       gnet.Engine // set by OnBoot, read after ready
	ready     chan struct{}
	readyOnce sync.Once
	startErr  error // why the engine did not start; read after ready

	listening conns.Listening

	regMu sync.Mutex // one Register at a time
	// registering has a place for each registration under way (register);
	// quit is closed when no more will be made.
	registering chan struct{}
	quit        chan struct{}
	quitOnce    sync.Once
	bridges     sync.WaitGroup // the TLS bridges (gnettls.go)

	loopsMu sync.Mutex
	loops   []*gloop     // one per event loop that has had a connection
	active  atomic.Int64 // connections in the loops' lists (gloop.open)
}

func newGnetTarget(cfg Settings, m *metrics.Metrics, log *slog.Logger, o Options) (*gnetTarget, error) {
	return &gnetTarget{
		cfg: cfg, m: m, log: log, opts: o,
		gate:        conns.NewGate(cfg.MaxConns),
		faults:      faults.New(cfg.Faults, m),
		ready:       make(chan struct{}),
		registering: make(chan struct{}, maxRegistering),
		quit:        make(chan struct{}),
		backlog:     int(max(16*min(cfg.MaxMessage, 1<<36), 1<<20)),
	}, nil
}

func (g *gnetTarget) options() []gnet.Option {
	opts := []gnet.Option{
		gnet.WithTicker(true), // its first tick says that the engine is up; the next ones sweep
		gnet.WithLogger(gnetLogger{g.log}),
	}
	if g.cfg.Loops > 0 {
		opts = append(opts, gnet.WithNumEventLoop(g.cfg.Loops))
	} else {
		opts = append(opts, gnet.WithMulticore(true))
	}
	// Round-robin (the default) balances a burst of connections evenly,
	// which least-connections cannot (it counts a connection only once its
	// loop has registered it). Its counter is not synchronised: only the
	// accept loop below calls Register, and the engine's own listener,
	// whose acceptor would call it too, is told to nobody.
	return opts
}

// Serve runs the engine and accepts connections from ln for it until
// Shutdown.
func (g *gnetTarget) Serve(ln net.Listener) error {
	if !g.listening.Start(ln) {
		return ln.Close()
	}
	runErr := make(chan error, 1)
	go func() { runErr <- gnet.Run(g, "tcp://127.0.0.1:0", g.options()...) }()
	select {
	case <-g.ready:
	case err := <-runErr:
		if err == nil {
			err = errors.New("the engine stopped at once")
		}
		g.startErr = fmt.Errorf("starting gnet: %w", err)
		g.readyOnce.Do(func() { close(g.ready) })
		_ = ln.Close()
		return g.startErr
	}
	stopped := make(chan error, 1)
	go func() {
		err := <-runErr
		g.stop()
		if !g.listening.Closing() {
			// The engine stopped on its own (gnet logged why): stop
			// accepting, and let the process say so.
			_ = ln.Close()
			if err == nil {
				err = errors.New("gnet's engine stopped")
			}
		}
		stopped <- err
	}()
	g.accept(ln)
	// The listener is closed: Shutdown is stopping the engine, or it has
	// stopped.
	return <-stopped
}

func (g *gnetTarget) accept(ln net.Listener) {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Counted and logged by conns.GuardedListener.
			backoff = conns.AcceptBackoff(backoff)
			g.log.Debug("accept failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if tc, ok := c.(*tls.Conn); ok {
			g.bridges.Go(func() { g.bridgeTLS(tc, time.Now()) })
			continue
		}
		g.register(c, time.Now())
	}
}

// maxRegistering bounds the registrations under way. Each holds one of
// gnet's pool workers until the loop has opened the connection, and ants
// keeps an idle worker, with its stack, for 10 s: unbounded, a burst of
// 1,000 connections left ~450 idle workers behind, about 0.2 KiB for each
// idle connection held (measured at 10,000). The accept loop waits for a
// place instead; the kernel's backlog holds the connections meanwhile.
const maxRegistering = 16

// register hands c to an event loop. Register hands c to a worker that
// duplicates its descriptor for the loop and closes c; its result channel
// is buffered. One caller at a time: gnet's round-robin counter is not
// synchronised, and the TLS bridges register from goroutines of their own.
func (g *gnetTarget) register(c net.Conn, accepted time.Time) {
	select {
	case g.registering <- struct{}{}:
	case <-g.quit:
		_ = c.Close()
		return
	}
	g.regMu.Lock()
	defer g.regMu.Unlock()
	st := &gconn{hs: &handshakeState{accepted: clock() - int64(time.Since(accepted))}}
	ctx := gnet.NewNetConnContext(gnet.NewContext(context.Background(), st), c)
	results, err := g.eng.Register(ctx)
	if err != nil {
		<-g.registering
		_ = c.Close()
		g.acceptError(err)
		return
	}
	go g.registered(results)
}

// registered frees a registration's place once gnet has the connection,
// and counts one that gnet could not take over: the duplicate descriptor
// costs one more, so near the open-files limit the dup fails with EMFILE,
// and gnet closes the connection without telling anyone. The worker
// closes the channel once it is done, so this never waits long.
func (g *gnetTarget) registered(results <-chan gnet.RegisteredResult) {
	defer func() { <-g.registering }()
	if r := <-results; r.Err != nil {
		g.acceptError(r.Err)
		g.log.Debug("gnet could not take a connection over", "err", r.Err)
	}
}

// acceptError counts a connection refused after its accept.
func (g *gnetTarget) acceptError(err error) {
	reason := conns.AcceptErrorReason(err)
	g.m.AcceptError(reason)
	if g.m == nil && g.opts.AcceptError != nil {
		g.opts.AcceptError(reason)
	}
}

// stop says that no more connections will be registered.
func (g *gnetTarget) stop() { g.quitOnce.Do(func() { close(g.quit) }) }

// OnBoot keeps the engine, for Register and Stop.
func (g *gnetTarget) OnBoot(eng gnet.Engine) gnet.Action {
	g.eng = eng
	return gnet.None
}

// OnTick first fires once every event loop exists: Register is safe from
// then on. Every tick after that starts the loops' keepalive sweeps.
func (g *gnetTarget) OnTick() (time.Duration, gnet.Action) {
	g.readyOnce.Do(func() { close(g.ready) })
	g.sweepAll()
	return g.sweepStep(), gnet.None
}

// OnOpen starts the -handshake-timeout clock, from the accept as net/http's
// ReadHeaderTimeout does.
func (g *gnetTarget) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	st, ok := c.Context().(*gconn)
	if !ok {
		// A connection to the engine's own listener.
		return nil, gnet.Close
	}
	st.conn = c
	st.loop = g.loopOf(c.EventLoop())
	st.slot = -1
	st.arm(g, g.cfg.HTTP.Header-time.Duration(clock()-st.hs.accepted))
	return nil, gnet.None
}

// OnClose settles the accounting of a connection, whatever ended it.
func (g *gnetTarget) OnClose(c gnet.Conn, _ error) gnet.Action {
	st, ok := c.Context().(*gconn)
	if !ok {
		return gnet.None
	}
	defer func() {
		if v := recover(); v != nil {
			conns.LogPanic(g.log, g.cfg.Name, v)
		}
	}()
	if st.timer != nil {
		st.timer.Stop()
	}
	g.leave(st)
	stopFaults(st.faults)
	st.faults = nil
	switch st.phase {
	case phaseHandshake, phaseLinger:
		if !st.counted && st.hs.started() {
			result := protocol.ResultAbandoned
			if g.listening.Closing() {
				result = protocol.ResultFailed
			}
			g.m.Handshake(result, transport, 0)
			g.unserved(false)
		}
	case phaseOpen, phaseClosing:
		reason := st.disconnectReason()
		if st.held {
			g.gate.Release()
		}
		st.rd.Reset()
		st.shut.Store(true)
		st.phase = phaseClosed
		g.m.Closed(reason)
		st.session.Closed()
	}
	st.phase = phaseClosed
	return gnet.None
}

// OnTraffic handles what has arrived on a connection.
func (g *gnetTarget) OnTraffic(c gnet.Conn) (action gnet.Action) {
	st, ok := c.Context().(*gconn)
	if !ok {
		return gnet.Close
	}
	defer func() {
		if v := recover(); v != nil {
			conns.LogPanic(g.log, g.cfg.Name, v)
			action = gnet.Close
		}
	}()
	switch st.phase {
	case phaseHandshake:
		if action, upgraded := g.handshake(c, st); !upgraded {
			return action
		}
		st.late = false // served by its late read; the close wait's clock is new
		if c.InboundBuffered() == 0 {
			return gnet.None
		}
		return g.frames(c, st)
	case phaseOpen, phaseClosing:
		st.heard = true
		action = g.frames(c, st)
		if st.late && st.phase == phaseClosing {
			return gnet.Close // the close wait's last read (expire)
		}
		return action
	default:
		_, _ = c.Discard(-1)
		return gnet.None
	}
}

// Shutdown stops accepting, sends every client 1001 and waits for them to
// go (dropping the rest when half the time is up), then stops the engine,
// which closes the connections whose upgrade had not completed.
func (g *gnetTarget) Shutdown(ctx context.Context) error {
	ln := g.listening.Stop()
	g.stop()
	if ln == nil {
		return nil
	}
	_ = ln.Close()
	select {
	case <-g.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if g.startErr != nil {
		return nil
	}
	err := g.drain(ctx)
	if stopErr := g.eng.Stop(ctx); err == nil {
		err = stopErr
	}
	// The engine has closed every loop's end: the TLS bridges are ending
	// (one still in its TLS handshake ends at -handshake-timeout).
	bridged := make(chan struct{})
	go func() { g.bridges.Wait(); close(bridged) }()
	select {
	case <-bridged:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

// gnetLogger sends gnet's log lines to the target's logger. Its routine
// lines (the engine starting and stopping) go to debug; Fatalf does not
// exit.
type gnetLogger struct{ log *slog.Logger }

func (l gnetLogger) logf(level slog.Level, format string, args []any) {
	if l.log.Enabled(context.Background(), level) {
		l.log.Log(context.Background(), level, "gnet: "+fmt.Sprintf(format, args...))
	}
}

func (l gnetLogger) Debugf(format string, args ...any) { l.logf(slog.LevelDebug, format, args) }
func (l gnetLogger) Infof(format string, args ...any)  { l.logf(slog.LevelDebug, format, args) }
func (l gnetLogger) Warnf(format string, args ...any)  { l.logf(slog.LevelWarn, format, args) }
func (l gnetLogger) Errorf(format string, args ...any) { l.logf(slog.LevelError, format, args) }
func (l gnetLogger) Fatalf(format string, args ...any) { l.logf(slog.LevelError, format, args) }

package wsserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"knowngood/shared/config"
	"knowngood/shared/conns"
	"knowngood/shared/faults"
	"knowngood/shared/metrics"
	"knowngood/shared/protocol"
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
	cfg    config.Config
	m      *metrics.Metrics
	log    *slog.Logger
	opts   Options
	gate   *conns.Gate
	conns  *conns.Registry[*gconn]
	faults *faults.Injector
	// backlog is how many bytes of replies may wait for a client that does
	// not read them: 16 messages of -max-message, at least 1 MiB.
	backlog int

	eng       gnet.Engine // set by OnBoot, read after ready
	ready     chan struct{}
	readyOnce sync.Once
	startErr  error // why the engine did not start; read after ready

	mu      sync.Mutex
	ln      net.Listener
	closing atomic.Bool

	regMu sync.Mutex // one Register at a time
	// registering has a place for each registration under way (register);
	// quit is closed when no more will be made.
	registering chan struct{}
	quit        chan struct{}
	quitOnce    sync.Once
	bridges     sync.WaitGroup // the TLS bridges (gnettls.go)
}

// Connection phases; each gconn moves forward through them only.
const (
	phaseHandshake = iota // reading the upgrade request
	phaseLinger           // refused: the answer is written, the rest is dropped
	phaseOpen             // serving messages
	phaseClosing          // the server sent its close frame, waits for the client's
	// phaseClosed: OnClose has run. gnet closes a connection inside Write
	// when the write fails, so every write is followed by a look at the
	// phase: the descriptor may already belong to another connection.
	phaseClosed
)

// gconn is one connection's state. Only its event loop touches it, except
// g, conn, deflate and queue (set before anyone else sees the gconn) and
// the atomics that Enqueue reads.
//
// An idle connection is mostly this struct, so what only some connections
// or some moments need lives elsewhere: the upgrade's state until the
// upgrade, the send queue on queued (broadcast) targets, -fault-delay's
// state once a delay is made, and a frame's scratch (frameScratch) for the
// length of one call.
type gconn struct {
	g        *gnetTarget
	conn     gnet.Conn
	session  Session
	phase    int
	hs       *handshakeState // nil once upgraded
	timer    *time.Timer
	deadline time.Time // of the handshake or of the close wait
	sent     int       // close code the server sent; 0 = none
	reason   string    // disconnect reason once known

	need int   // bytes that must be buffered before the next parse
	skip int64 // bytes of a dropped frame still to come (closing)
	// lingering: closing, and the client's frames cannot be read on; what
	// comes is dropped until the client closes (failLost).
	lingering bool

	// The message being reassembled from fragments; op is 0 when none is.
	msg        *[]byte
	op         byte
	compressed bool

	counted bool // the handshake's result has been recorded
	held    bool // holds a -max-conns place
	deflate bool // permessage-deflate was negotiated
	pinged  bool // the keepalive's ping is out

	out *[]byte // the replies of the OnTraffic call under way; nil between calls

	queue *sendQueue // nil unless the target queues (Options.Queue)
	// Enqueue's view from other goroutines: bytes gnet holds for a client
	// that does not read, and whether the server has begun to close.
	outbound atomic.Int64
	shut     atomic.Bool

	rx, tx counts // echoed in the current frames call, for the metrics

	// The keepalive (see httpPeer.keepalive): reads counts OnTraffic
	// calls, the sign of life; pingMark is its value when the ping went.
	ka       *time.Timer
	reads    uint32
	pingMark uint32

	delay *delayState // -fault-delay; nil until the first delay
}

// handshakeState is what a connection needs until its upgrade.
type handshakeState struct {
	accepted time.Time
	first    time.Time // first byte of the upgrade request
	lineOK   bool      // the request line has been checked
}

// sendQueue holds the frames not handed to gnet yet (Enqueue, flush), the
// queue entries they make (a Pair is one entry of two frames), the
// payload bytes they carry, whether a flush is scheduled on the loop, and
// the slice the last flush used (reused, not reallocated).
type sendQueue struct {
	mu       sync.Mutex
	frames   [][]byte
	entries  int
	spare    [][]byte
	bytes    int
	flushing bool
}

// delayState is -fault-delay on one connection: messages waiting for
// their time, in order, and the timer that wakes the loop for the first.
type delayState struct {
	due   []delayed
	timer *time.Timer
}

// frameScratch is what parsing or writing a frame needs for the moment:
// pooled, since one per busy loop is enough and idle connections far
// outnumber busy loops.
type frameScratch struct {
	hdr [maxFrameHeader]byte // a frame header, written
	iov [2][]byte            // header and payload for Writev
}

var scratches = sync.Pool{New: func() any { return new(frameScratch) }}

const maxFrameHeader = 14

func newGnetTarget(cfg config.Config, m *metrics.Metrics, log *slog.Logger, o Options) (*gnetTarget, error) {
	return &gnetTarget{
		cfg: cfg, m: m, log: log, opts: o,
		gate:        conns.NewGate(cfg.MaxConns),
		conns:       conns.NewRegistry[*gconn](),
		faults:      faults.New(cfg, m),
		ready:       make(chan struct{}),
		registering: make(chan struct{}, maxRegistering),
		quit:        make(chan struct{}),
		backlog:     int(max(16*min(cfg.MaxMessage, 1<<36), 1<<20)),
	}, nil
}

func (g *gnetTarget) options() []gnet.Option {
	opts := []gnet.Option{
		gnet.WithTicker(true), // its first tick says that the engine is up
		gnet.WithLogger(gnetLogger{g.log}),
	}
	if g.cfg.Gnet.Loops > 0 {
		opts = append(opts, gnet.WithNumEventLoop(g.cfg.Gnet.Loops))
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
	g.mu.Lock()
	g.ln = ln
	closing := g.closing.Load()
	g.mu.Unlock()
	if closing {
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
		if !g.closing.Load() {
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
	st := &gconn{g: g, hs: &handshakeState{accepted: accepted}}
	if g.opts.Queue > 0 {
		st.queue = &sendQueue{}
	}
	ctx := gnet.NewNetConnContext(gnet.NewContext(context.Background(), st), c)
	results, err := g.eng.Register(ctx)
	if err != nil {
		<-g.registering
		_ = c.Close()
		g.m.AcceptError(conns.AcceptErrorReason(err))
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
		g.m.AcceptError(conns.AcceptErrorReason(r.Err))
		g.log.Debug("gnet could not take a connection over", "err", r.Err)
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
// then on.
func (g *gnetTarget) OnTick() (time.Duration, gnet.Action) {
	g.readyOnce.Do(func() { close(g.ready) })
	return time.Hour, gnet.None
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
	st.arm(g, g.cfg.HandshakeTimeout-time.Since(st.hs.accepted))
	return nil, gnet.None
}

// arm (re)starts the connection's timer: when it fires, expire runs on the
// connection's loop.
func (st *gconn) arm(g *gnetTarget, d time.Duration) {
	d = max(d, 0)
	st.deadline = time.Now().Add(d)
	if st.timer != nil {
		st.timer.Reset(d)
		return
	}
	st.timer = time.AfterFunc(d, func() { g.onLoop(st, g.expire) })
}

// onLoop runs f on st's event loop, unless the connection has closed.
func (g *gnetTarget) onLoop(st *gconn, f func(*gconn)) {
	_ = st.conn.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		defer func() {
			if v := recover(); v != nil {
				conns.LogPanic(g.log, g.cfg.Variant, v)
			}
		}()
		if st.phase != phaseClosed {
			f(st)
		}
		return nil
	}))
}

// expire closes a connection whose upgrade request did not complete in
// time, or whose client did not answer the server's close in time.
func (g *gnetTarget) expire(st *gconn) {
	if time.Now().Before(st.deadline) || st.phase == phaseOpen {
		return // a timer that fired just before being re-armed or stopped
	}
	if st.phase == phaseHandshake {
		g.m.Timeout(metrics.ListenerTarget, metrics.StageHeader)
		if !st.hs.first.IsZero() && !st.counted {
			st.counted = true
			g.m.Handshake(protocol.ResultFailed, transport, 0)
		}
	}
	_ = st.conn.EventLoop().Close(st.conn)
}

// OnClose settles the accounting of a connection, whatever ended it.
func (g *gnetTarget) OnClose(c gnet.Conn, _ error) gnet.Action {
	st, ok := c.Context().(*gconn)
	if !ok {
		return gnet.None
	}
	defer func() {
		if v := recover(); v != nil {
			conns.LogPanic(g.log, g.cfg.Variant, v)
		}
	}()
	if st.timer != nil {
		st.timer.Stop()
	}
	if st.ka != nil {
		st.ka.Stop()
	}
	if st.delay != nil {
		st.delay.timer.Stop()
		clear(st.delay.due)
		st.delay = nil
	}
	switch st.phase {
	case phaseHandshake, phaseLinger:
		if !st.counted && !st.hs.first.IsZero() {
			result := protocol.ResultAbandoned
			if g.closing.Load() {
				result = protocol.ResultFailed
			}
			g.m.Handshake(result, transport, 0)
		}
	case phaseOpen, phaseClosing:
		reason := st.reason
		if reason == "" {
			reason = reasonAbnormal
		}
		if st.held {
			g.gate.Release()
		}
		st.dropMessage()
		st.shut.Store(true)
		st.phase = phaseClosed
		g.m.Closed(reason)
		g.conns.Remove(st)
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
			conns.LogPanic(g.log, g.cfg.Variant, v)
			action = gnet.Close
		}
	}()
	switch st.phase {
	case phaseHandshake:
		if action, upgraded := g.handshake(c, st); !upgraded {
			return action
		}
		if c.InboundBuffered() == 0 {
			return gnet.None
		}
		return g.frames(c, st)
	case phaseOpen, phaseClosing:
		st.reads++
		return g.frames(c, st)
	default:
		_, _ = c.Discard(-1)
		return gnet.None
	}
}

var headerEnd = []byte("\r\n\r\n")

// handshake reads the upgrade request once all of it has arrived, however
// many pieces it came in, checks it as the other targets do, and answers.
func (g *gnetTarget) handshake(c gnet.Conn, st *gconn) (gnet.Action, bool) {
	hs := st.hs
	if hs.first.IsZero() {
		hs.first = time.Now()
	}
	buf, err := c.Peek(-1)
	if err != nil {
		return gnet.None, false
	}
	end := bytes.Index(buf, headerEnd)
	if end < 0 {
		// As net/http: a bad request line is answered as soon as it is in,
		// a header that never ends once it is too large.
		if !hs.lineOK {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				if !validRequestLine(buf[:i]) {
					return g.refuse(c, st, malformed("malformed request line")), false
				}
				hs.lineOK = true
			}
		}
		if len(buf) > maxHeaderBytes+4096 {
			return g.refuse(c, st, &refusal{status: http.StatusRequestHeaderFieldsTooLarge, msg: "request header too large", result: protocol.ResultFailed}), false
		}
		return gnet.None, false
	}
	n := end + len(headerEnd)
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(buf[:n])))
	if err != nil {
		return g.refuse(c, st, malformed(err.Error())), false
	}
	if req.ProtoAtLeast(1, 1) && req.Host == "" {
		return g.refuse(c, st, malformed("missing required Host header")), false
	}
	if rf := admit(g.closing.Load(), req, g.cfg, g.gate, g.faults); rf != nil {
		return g.refuse(c, st, rf), false
	}
	st.held = true

	resp := make([]byte, 0, 256)
	resp = append(resp, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	resp = append(resp, acceptKey(req.Header.Get("Sec-WebSocket-Key"))...)
	if ext, ok := g.negotiate(req); ok {
		st.deflate = true
		resp = append(resp, "\r\nSec-WebSocket-Extensions: "...)
		resp = append(resp, ext...)
	}
	resp = append(resp, "\r\n\r\n"...)
	_, _ = c.Discard(n)

	// Counted before the 101 goes out: a client that has read it may look
	// at /stats at once, and must find its handshake there.
	st.phase = phaseOpen
	st.timer.Stop()
	st.timer = nil
	st.hs = nil
	st.counted = true
	g.m.Handshake(protocol.ResultOK, transport, time.Since(hs.first))
	g.m.Opened()
	// Opened before the 101 is written: a client that has read it is a
	// member. What is enqueued meanwhile is flushed by a task that runs on
	// this loop after this call, so after the 101.
	st.session = withFaults(g.opts.Handler.Open(st), st, g.faults, st)
	st.ka = time.AfterFunc(g.cfg.PingInterval, func() { g.onLoop(st, g.keepalive) })
	added := g.conns.Add(st)
	if _, _ = c.Write(resp); st.phase == phaseClosed {
		return gnet.None, false // the write failed: gnet closed the connection, and OnClose settled it
	}
	if !added {
		// Shutdown began during the upgrade.
		st.Close(CloseGoingAway)
	}
	return gnet.None, true
}

// keepalive pings a connection that has been quiet for -ping-interval and
// drops it, as ping_timeout, if it stays quiet for -ping-timeout.
func (g *gnetTarget) keepalive(st *gconn) {
	if st.phase != phaseOpen {
		return
	}
	switch {
	case !st.pinged && st.reads != st.pingMark:
		st.pingMark = st.reads
		st.ka.Reset(g.cfg.PingInterval)
	case !st.pinged:
		st.pinged = true
		st.pingMark = st.reads
		ping := appendFrame(nil, 0, 0x9, nil)
		if _, _ = st.conn.Write(ping); st.phase == phaseClosed {
			return
		}
		st.ka.Reset(g.cfg.PingTimeout)
	case st.reads == st.pingMark:
		st.reason = reasonPingTimeout
		_ = st.conn.EventLoop().Close(st.conn)
	default:
		st.pinged = false
		st.pingMark = st.reads
		st.ka.Reset(g.cfg.PingInterval)
	}
}

// after is -fault-delay on gnet: f runs on the loop once d has passed, in
// order, with the replies it makes written as one; the loop never waits.
func (st *gconn) after(d time.Duration, f func()) {
	if st.delay == nil {
		st.delay = &delayState{}
	}
	dl := st.delay
	dl.due = append(dl.due, delayed{time.Now().Add(d), f})
	if len(dl.due) > 1 {
		return // the timer is set for the first
	}
	if dl.timer == nil {
		dl.timer = time.AfterFunc(d, func() { st.g.onLoop(st, st.g.runDelayed) })
		return
	}
	dl.timer.Reset(d)
}

func (g *gnetTarget) runDelayed(st *gconn) {
	dl := st.delay
	if dl == nil {
		return // closed: OnClose dropped them
	}
	out := getBuffer()
	defer putBuffer(out)
	st.out = out
	now := time.Now()
	i := 0
	for ; i < len(dl.due) && !dl.due[i].due.After(now) && st.phase == phaseOpen; i++ {
		dl.due[i].f()
	}
	st.out = nil
	if len(*out) > 0 && st.phase != phaseClosed {
		_, _ = st.conn.Write(*out)
	}
	g.flushCounts(st)
	if st.phase != phaseOpen {
		return
	}
	clear(dl.due[:i])
	dl.due = dl.due[i:]
	if len(dl.due) > 0 {
		dl.timer.Reset(time.Until(dl.due[0].due))
	}
}

func malformed(why string) *refusal {
	return &refusal{status: http.StatusBadRequest, msg: "malformed HTTP request: " + why, result: protocol.ResultFailed}
}

// refuse answers the request, then, as net/http does, sends FIN and drops
// what the client still sends until it closes or closeWait passes: closing
// at once with unread bytes would send RST, and the client could lose the
// answer.
func (g *gnetTarget) refuse(c gnet.Conn, st *gconn, rf *refusal) gnet.Action {
	st.counted = true
	g.m.Handshake(rf.result, transport, 0)
	if _, _ = c.Write(rf.bytes()); st.phase == phaseClosed {
		return gnet.None
	}
	_, _ = c.Discard(-1)
	st.phase = phaseLinger
	if c.OutboundBuffered() == 0 {
		_ = unix.Shutdown(c.Fd(), unix.SHUT_WR)
	}
	st.arm(g, closeWait)
	return gnet.None
}

// validRequestLine checks "METHOD SP TARGET SP HTTP/x.y" as net/http does.
func validRequestLine(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	method, rest, ok1 := bytes.Cut(line, []byte(" "))
	target, proto, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || len(method) == 0 || len(target) == 0 {
		return false
	}
	for _, b := range method {
		if b <= ' ' || b >= 0x7f || bytes.IndexByte([]byte(`()<>@,;:\"/[]?={}`), b) >= 0 {
			return false
		}
	}
	_, _, ok := http.ParseHTTPVersion(string(proto))
	return ok
}

// negotiate returns the Sec-WebSocket-Extensions value of the answer, if
// a permessage-deflate offer is accepted (see negotiateDeflate).
func (g *gnetTarget) negotiate(req *http.Request) (string, bool) {
	if !g.cfg.Compression {
		return "", false
	}
	return negotiateDeflate(req.Header)
}

// Close starts the server's close with code, from any goroutine; what is
// queued is dropped.
func (st *gconn) Close(code int) { st.close(code, false) }

// closeAfterQueue is Close once the queue is written.
func (st *gconn) closeAfterQueue(code int) { st.close(code, true) }

func (st *gconn) close(code int, drain bool) {
	st.shut.Store(true)
	st.g.onLoop(st, func(st *gconn) {
		if drain {
			st.flush()
		}
		if st.phase != phaseOpen {
			return
		}
		out := getBuffer()
		*out = appendClose(*out, code)
		st.closing(st.g, code)
		_, _ = st.conn.Write(*out)
		putBuffer(out)
	})
}

// Shutdown stops accepting, sends every client 1001 and waits for them to
// go (dropping the rest when half the time is up), then stops the engine,
// which closes the connections whose upgrade had not completed.
func (g *gnetTarget) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closing.Store(true)
	ln := g.ln
	g.mu.Unlock()
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
	goAway := func(st *gconn) { st.Close(CloseGoingAway) }
	err := conns.Drain(ctx, g.conns, goAway, func(st *gconn) { _ = st.conn.Close() })
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

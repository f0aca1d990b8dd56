package conns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/loadgen/internal/proc"
	"github.com/knowngood/knowngood/loadgen/internal/progress"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/loadgen/siolite"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// kindDropped: a connection lost while held (the others are target's).
const kindDropped = "dropped while held"

const (
	// closeWait bounds the wait for the connections' readers to end once
	// every connection is closed.
	closeWait = 10 * time.Second
	// closeParallel bounds the closes in progress at once.
	closeParallel = 64
	// wsReadBuffer is small: an idle connection reads nothing, and the
	// client's memory is not what is measured.
	wsReadBuffer = 1024
)

// Run opens cfg.N idle connections in batches, holds them for cfg.Hold, and
// reports. The open-files budget goes to notes first, one line; a -n beyond
// it is refused. It returns an error only when the run could not take
// place at all.
func Run(ctx context.Context, cfg Config, notes io.Writer) (*Report, error) {
	files, err := proc.CheckFiles(notes, "n", cfg.N, true)
	if err != nil {
		return nil, err
	}
	if cfg.Get {
		return runGet(ctx, cfg, notes, files)
	}
	u, err := cfg.CheckURL(ctx, notes, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	sio, isSIO, err := socketIOTarget(u)
	if err != nil {
		return nil, err
	}
	r := newRun(cfg, u, newReport(cfg, u, isSIO), notes)
	if isSIO {
		r.sio = &sio
		r.workers = &sioclient.Workers{}
		defer r.workers.Close()
	}
	switch {
	case !onLoops(cfg, u, sio):
	case isSIO:
		if r.sioLoop, err = siolite.NewLoop(); err != nil {
			return nil, err
		}
		defer r.sioLoop.Close()
		_, r.rep.Version = target.Client(u, target.Gobwas)
		r.rep.Client, r.rep.Version = leanClientName, r.rep.Version+loopsClient
	default:
		if r.holders, err = newHolders(r.errs); err != nil {
			return nil, err
		}
		defer r.holders.stop()
		r.rep.Client, r.rep.Version = target.Client(u, target.Gobwas)
		r.rep.Version += loopsClient
	}
	return r.run(ctx, files)
}

// runGet is Run with -get: one GET per connection, nothing held.
func runGet(ctx context.Context, cfg Config, notes io.Writer, files proc.Files) (*Report, error) {
	u, err := httpURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	rep := newReport(cfg, u, false)
	rep.Client, rep.Version = "net/http (one GET per TCP connection)", runtime.Version()
	r := newRun(cfg, u, rep, notes)
	p, _ := url.Parse(u.String)
	r.request = "GET " + p.RequestURI() + " HTTP/1.1\r\nHost: " + u.Addr + "\r\nUser-Agent: loadgen\r\nConnection: close\r\n\r\n"
	return r.run(ctx, files)
}

func newRun(cfg Config, u target.URL, rep *Report, notes io.Writer) *run {
	r := &run{cfg: cfg, u: u, rep: rep, errs: &tally.Errors{}, notes: notes, connect: protocol.NewHistogram()}
	if cfg.Echo > 0 {
		r.payload = bytes.Repeat([]byte{'e'}, cfg.Echo)
	}
	return r
}

// run runs the scenario's frame around r.
func (r *run) run(ctx context.Context, files proc.Files) (*Report, error) {
	rep, err := scenario.Run(ctx, scenario.Options{Admin: r.cfg.Admin, Scenario: "conns", Shard: r.cfg.Shard}, r)
	if rep != nil && err == nil {
		rep.OpenFiles = files.String()
		rep.OpenFilesAllow = files.Allows()
	}
	return rep, err
}

// held is one open connection: its close, and watch, which calls its
// argument once when the connection ends (the target dropped it, or the
// run closed it).
type held struct {
	close func()
	watch func(ended func(error))
}

// onGoroutine watches a connection with a goroutine of its own, which
// read blocks until the connection ends.
func onGoroutine(read func() error) func(func(error)) {
	return func(ended func(error)) { go func() { ended(read()) }() }
}

// run is the scenario's part of a run: the connections, held, and the
// target's RSS from /proc with -pid (its /stats is the skeleton's).
type run struct {
	cfg     Config
	u       target.URL
	sio     *sioTarget         // a Socket.IO URL; nil for a WebSocket or TCP one
	workers *sioclient.Workers // open the Socket.IO sockets' transports
	holders *holders           // -loop's, for ws:// and tcp:// URLs; nil on goroutines
	sioLoop *siolite.Loop      // -loop's, for a Socket.IO URL over WebSocket; nil otherwise
	rep     *Report
	errs    *tally.Errors
	notes   io.Writer

	payload []byte // -echo's message; nil without
	request string // -get's request

	mu      sync.Mutex
	conns   []held
	connect *hdrhistogram.Histogram // each established connection's time from its dial, µs
	// answeredGets: -get's requests answered with -status, closed since
	answeredGets atomic.Int64
	alive        atomic.Int64 // established and not dropped
	// answered: dials the target answered with an HTTP status, not a 101
	answered atomic.Int64
	closing  atomic.Bool // set before the run closes them: their ends are not drops
	readers  sync.WaitGroup

	before, after sample // the target's memory before the first dial and at the end of the hold
}

// Prepare reads the target's RSS before the first dial.
func (r *run) Prepare(context.Context, *scenario.Frame) error {
	r.before = procSample(r.cfg.PID)
	return nil
}

// Load opens the connections and holds them.
func (r *run) Load(ctx context.Context, f *scenario.Frame) bool {
	cfg, rep := r.cfg, r.rep
	start := time.Now()
	tl := timeline.New(start)
	bar := progress.Count(r.notes, cfg.N, "connecting")
	writePool := &target.BufferPool{}
	rep.Batches = target.Ramp(ctx, cfg.N, cfg.Batch, cfg.Sources, r.errs, func(ctx context.Context, _ int, src netip.Addr) error {
		defer bar.Add(1)
		t0 := time.Now()
		var h held
		var err error
		if r.cfg.Get {
			err = r.get(ctx, src)
		} else {
			h, err = r.dial(ctx, src, writePool)
		}
		t1 := time.Now()
		if err != nil {
			tl.Error(t1)
			if refused := (*target.Refused)(nil); errors.As(err, &refused) {
				r.answered.Add(1)
			}
			return err
		}
		tl.Record(t1, t1.Sub(t0))
		r.mu.Lock()
		_ = r.connect.RecordValue(max(1, t1.Sub(t0).Microseconds())) // beyond 10 min is dropped
		r.mu.Unlock()
		if r.cfg.Get {
			r.answeredGets.Add(1)
			return nil
		}
		r.keep(h)
		return nil
	})
	bar.Done()
	rep.EstablishSeconds = time.Since(start).Seconds()
	rep.Samples = tl.Samples(time.Since(start))
	rep.Established = len(r.conns) + int(r.answeredGets.Load())
	rep.Failed = cfg.N - rep.Established
	rep.setConnect(r.connect)
	fmt.Fprintf(r.notes, "loadgen: %d connections established in %.2fs; holding them %s\n", rep.Established, rep.EstablishSeconds, cfg.Hold)

	bar = progress.Timed(r.notes, cfg.Hold, "holding")
	hold := time.NewTimer(cfg.Hold)
	select {
	case <-hold.C:
	case <-ctx.Done():
		hold.Stop()
	}
	bar.Done()
	if cfg.Get {
		awaitAnswered(ctx, f, int(r.answered.Load()))
	} else {
		awaitAccepted(ctx, f, rep.Established)
	}
	// Held counts the connections alive when the target's memory is read.
	rep.Held = int(r.alive.Load())
	r.after = procSample(cfg.PID)
	return true
}

// keep holds an established connection, and notices when it drops.
func (r *run) keep(h held) {
	r.alive.Add(1)
	r.mu.Lock()
	r.conns = append(r.conns, h)
	r.mu.Unlock()
	r.readers.Add(1)
	h.watch(func(err error) {
		if !r.closing.Load() {
			r.alive.Add(-1)
			r.errs.Add(kindDropped, 1, err)
		}
		r.readers.Done()
	})
}

// loopsClient follows the client library's version in a report when the
// connections are held on event loops.
const loopsClient = ", held on gnet event loops"

// leanClientName names loadgen's lean Socket.IO client in a report.
const leanClientName = "loadgen/siolite on gobwas/ws"

// onLoops reports whether -loop holds u's connections on event loops:
// ws:// and tcp:// ones, and Socket.IO sockets over WebSocket, which the
// lean client (loadgen/siolite) holds there. TLS connections stay on
// goroutines, and Socket.IO over polling stays with the zishang520
// client; so does every Socket.IO URL with -loop=false.
func onLoops(cfg Config, u target.URL, sio sioTarget) bool {
	return cfg.Loop && !u.TLS && (sio.base == "" || sio.transport == sioclient.WebSocket)
}

// dial opens one connection from src.
func (r *run) dial(ctx context.Context, src netip.Addr, writePool *target.BufferPool) (held, error) {
	switch {
	case r.sioLoop != nil:
		return r.dialLean(ctx, src)
	case r.sio != nil:
		return r.dialSocketIO(ctx)
	}
	deadline := time.Now().Add(r.cfg.Timeout)
	opts := target.Options{Timeout: r.cfg.Timeout, Source: src, ReadBuffer: wsReadBuffer, WriteBuffer: wsReadBuffer, WriteBufferPool: writePool, TLS: r.cfg.TLS.Config()}
	if r.u.TCP {
		c, err := target.DialTCP(ctx, r.u, opts)
		if err == nil && r.payload != nil {
			err = echoTCP(c, r.payload, deadline)
		}
		if err != nil {
			return held{}, err
		}
		if r.holders != nil {
			return r.holders.hold(c, nil, false)
		}
		return held{close: func() { _ = c.Close() }, watch: onGoroutine(func() error {
			var b [512]byte
			for {
				if _, err := c.Read(b[:]); err != nil {
					return err
				}
			}
		})}, nil
	}
	if r.holders != nil {
		c, br, err := target.DialWebSocketStream(ctx, r.u, opts)
		if err == nil && r.payload != nil {
			err = echoStream(c, br, r.payload, deadline)
		}
		if err != nil {
			return held{}, err
		}
		return r.holders.hold(c, br, true)
	}
	c, err := target.DialWebSocket(ctx, r.u, opts)
	if err == nil && r.payload != nil {
		err = echoGorilla(c, r.payload, deadline)
	}
	if err != nil {
		return held{}, err
	}
	return held{
		close: func() {
			msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
			_ = c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
			_ = c.Close()
		},
		watch: onGoroutine(func() error {
			for {
				if _, _, err := c.NextReader(); err != nil {
					return err
				}
			}
		}),
	}, nil
}

// Finish reads the RSS once more with -free-os-memory, closes the
// connections and judges the run.
func (r *run) Finish(ctx context.Context, f *scenario.Frame) *Report {
	cfg, rep := r.cfg, r.rep
	rep.ClientCPUSeconds = f.ClientCPU
	before, after := r.before.with(f.Before), r.after.with(f.After)
	var freed *sample
	if cfg.FreeOSMemory && cfg.Admin != "" {
		if err := f.Target.FreeOSMemory(ctx); err != nil {
			freed = &sample{procErr: err, server: &scenario.Snapshot{Err: err}}
		} else {
			s := procSample(cfg.PID).with(f.Target.Snapshot(ctx))
			freed = &s
		}
	}
	rep.Dropped = len(r.conns) - rep.Held

	r.closing.Store(true)
	closeAll(r.conns)
	readersDone := make(chan struct{})
	go func() { r.readers.Wait(); close(readersDone) }()
	select {
	case <-readersDone:
	case <-time.After(closeWait):
		fmt.Fprintf(r.notes, "loadgen: connections still closing after %s\n", closeWait)
	}
	rep.Errors = r.errs.Map()
	rep.Server, rep.ServerError = serverView(cfg, before, after, freed, rep.Held)
	rep.Verdicts = f.Judge(verdict.Run{Attempts: cfg.N, Connected: rep.Established, Deadline: cfg.Timeout, Unit: r.unit(), Answered: int(r.answered.Load()), Sent: -1, Received: -1,
		ClientCPU: f.ClientCPU, Window: f.Window, ServerCPU: f.ServerCPU()})
	rep.Shard = f.ShardPart()
	if rep.ServerError != "" {
		fmt.Fprintf(r.notes, "loadgen: %s\n", rep.ServerError)
	}
	return rep
}

// unit is what the run's connections are, for the verdicts.
func (r *run) unit() string {
	switch {
	case r.cfg.Get:
		return verdict.UnitHTTP
	case r.u.TCP:
		return verdict.UnitTCP
	}
	return ""
}

// closeAll closes the connections, closeParallel at a time.
func closeAll(conns []held) {
	target.EachAtMost(conns, closeParallel, func(_ int, h held) { h.close() })
}

// sample is the target's memory at one moment.
type sample struct {
	server  *scenario.Snapshot // nil without an admin listener
	procRSS float64
	procErr error
}

// procSample reads the RSS of process pid; nothing when pid is 0.
func procSample(pid int) sample {
	var s sample
	if pid != 0 {
		s.procRSS, s.procErr = proc.ResidentBytes(pid)
	}
	return s
}

// with is s with the /stats read at the same moment.
func (s sample) with(server *scenario.Snapshot) sample {
	s.server = server
	return s
}

// rss is the sample's RSS from source ("proc" or "stats").
func (s sample) rss(source string) (float64, error) {
	if source == "proc" {
		return s.procRSS, s.procErr
	}
	if err := s.server.Failure(); err != nil {
		return 0, err
	}
	if s.server == nil || s.server.Stats.ResidentBytes == nil {
		return 0, errors.New("no resident memory in /stats")
	}
	return *s.server.Stats.ResidentBytes, nil
}

// serverView combines the samples: RSS from /proc when -pid is given, else
// from /stats; freed (with -free-os-memory) is after the target returned
// its free memory. The string says what failed.
func serverView(cfg Config, before, after sample, freed *sample, heldConns int) (*ServerView, string) {
	v := &ServerView{PID: cfg.PID}
	var problems []error
	if cfg.PID != 0 {
		if err := errors.Join(before.procErr, after.procErr); err != nil {
			problems = append(problems, fmt.Errorf("no RSS of process %d: %w", cfg.PID, err))
		} else {
			v.RSSBefore, v.RSSAfter, v.RSSSource = &before.procRSS, &after.procRSS, "proc"
		}
	}
	before.server, after.server = scenario.Pair(before.server, after.server)
	if cfg.Admin != "" {
		if err := errors.Join(before.server.Failure(), after.server.Failure()); err != nil {
			problems = append(problems, fmt.Errorf("no /stats from %s: %w", cfg.Admin, err))
		} else {
			b, a := before.server.Stats, after.server.Stats
			v.Admin, v.Variant = cfg.Admin, a.Variant
			v.ConnectionsActive = &a.ConnectionsActive
			d := protocol.Diff(b.Stats, a.Stats)
			v.ConnectionsOpened = &d.ConnectionsTotal
			ok := d.Handshakes[protocol.ResultOK]
			v.HandshakesOK = &ok
			v.Replicas = cfg.ReplicasOf(before.server, after.server)
			if v.RSSSource == "" && b.ResidentBytes != nil && a.ResidentBytes != nil {
				v.RSSBefore, v.RSSAfter, v.RSSSource = b.ResidentBytes, a.ResidentBytes, "stats"
			}
		}
	}
	if v.RSSSource != "" && heldConns > 0 {
		per := (*v.RSSAfter - *v.RSSBefore) / float64(heldConns)
		v.BytesPerConnection = &per
		if freed != nil {
			if rss, err := freed.rss(v.RSSSource); err != nil {
				problems = append(problems, fmt.Errorf("-free-os-memory: %w", err))
			} else {
				v.RSSAfterFree = &rss
				perFree := (rss - *v.RSSBefore) / float64(heldConns)
				v.BytesPerConnectionAfterFree = &perFree
			}
		}
	}
	problem := ""
	if err := errors.Join(problems...); err != nil {
		problem = err.Error()
	}
	if v.Variant == "" && v.RSSSource == "" {
		return nil, problem
	}
	return v, problem
}

// awaitAnswered is awaitAccepted for -get: a target that answers a GET
// with a status counts it when it has written it (a WebSocket target, as
// a handshake that failed), so the client can read the answer first.
func awaitAnswered(ctx context.Context, f *scenario.Frame, n int) {
	seen := func(s protocol.Stats) (n uint64) {
		for _, c := range s.Handshakes {
			n += c
		}
		return n
	}
	f.Target.Await(ctx, f.Before, acceptWait, func(before, now protocol.Stats) bool {
		return seen(now)-seen(before) >= uint64(n)
	})
}

// acceptWait bounds awaitAccepted.
const acceptWait = 3 * time.Second

// awaitAccepted waits, up to acceptWait, until the target has opened the
// n connections the client established. A TCP connection is established
// for the client when the kernel completes it, before the server accepts
// it from its backlog: with -hold 0 on a busy machine, a read of /stats
// taken at once finds connections the server has not yet counted, and
// the verdict would call them lost. A target that never opens them all
// (a cap, a fault) is read as it is once the wait is over.
func awaitAccepted(ctx context.Context, f *scenario.Frame, n int) {
	f.Target.Await(ctx, f.Before, acceptWait, func(before, now protocol.Stats) bool {
		return now.ConnectionsTotal-before.ConnectionsTotal >= uint64(n)
	})
}

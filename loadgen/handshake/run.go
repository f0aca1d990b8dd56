package handshake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/loadgen/internal/progress"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

const (
	clientName   = "zishang520/socket.io-client-go"
	clientModule = "github.com/zishang520/socket.io/clients/socket/v3"
	// settleWait bounds the wait for the server to see the run's
	// connections go before the after snapshot.
	settleWait = 3 * time.Second
)

// Run opens cfg.N connections at once and reports what happened. Notes for
// the user (an unreachable /stats) go to notes, one line each. It returns an
// error only when the run could not take place at all.
func Run(ctx context.Context, cfg Config, notes io.Writer) (*Report, error) {
	// The deadline is ours (a context); the client's own open timeout only
	// backs it up, later, so that a late connection reads "deadline
	// exceeded", never sometimes "timeout".
	opts := sioclient.Options{URL: cfg.URL, Namespace: cfg.Namespace, Transport: cfg.Transport, OpenTimeout: cfg.Deadline + time.Second, TLS: cfg.TLS.Config()}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if u, err := url.Parse(cfg.URL); err == nil { // checked by ParseFlags
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "443")
		}
		t := target.URL{String: cfg.URL, TLS: u.Scheme == "https", Addr: addr, Host: u.Hostname()}
		if err := cfg.TLS.Check(ctx, notes, t, cfg.Deadline); err != nil {
			return nil, err
		}
	}
	rep := &Report{
		Heading:   scenario.Heading{Client: clientName, Version: clientVersion(), URL: cfg.URL},
		Transport: cfg.Transport, Namespace: cfg.Namespace, Deadline: cfg.Deadline.String(),
		Attempts: cfg.N, Errors: map[string]int{},
	}
	return scenario.Run(ctx, scenario.Options{Admin: cfg.Admin, Settle: settleWait, Scenario: "handshake", Shard: cfg.Shard}, &run{cfg: cfg, opts: opts, rep: rep, notes: notes})
}

// run is the scenario's part of a run: the connections, the echoes, the
// closes.
type run struct {
	cfg   Config
	opts  sioclient.Options
	rep   *Report
	notes io.Writer
}

func (r *run) Prepare(context.Context, *scenario.Frame) error { return nil }

// Load connects, echoes and closes.
func (r *run) Load(ctx context.Context, f *scenario.Frame) bool {
	rep := r.rep
	if f.Before != nil && f.Before.Err != nil {
		rep.ServerError = fmt.Sprintf("no /stats from %s: %v", r.cfg.Admin, f.Before.Err)
		fmt.Fprintf(r.notes, "loadgen: %s; going on without the server's view\n", rep.ServerError)
	}
	// The transports' dials run on workers that the connections reuse;
	// they end once every connection is closed.
	opts := r.opts
	opts.Workers = &sioclient.Workers{}
	defer opts.Workers.Close()
	if _, set := os.LookupEnv("GOGC"); !set { // the user's choice stands
		defer debug.SetGCPercent(debug.SetGCPercent(handshakeGCPercent))
	}
	conns, all, lat, total := connectAll(ctx, r.cfg, opts, rep, r.notes)
	rep.TotalMs = ms(total)
	if total > 0 {
		rep.HandshakesPerSecond = float64(rep.Connected) / total.Seconds()
	}
	if lat.TotalCount() > 0 {
		l := protocol.LatencyOf(lat)
		rep.P50ms, rep.P95ms, rep.P99ms, rep.MaxMs = msPtr(l.P50*1000), msPtr(l.P95*1000), msPtr(l.P99*1000), msPtr(l.Max*1000)
	}
	rep.Distribution = timeline.Distribution(lat)
	if r.cfg.Shard.Set() {
		rep.LatencyHistogram = protocol.Buckets(lat)
	}
	if r.cfg.Echo {
		echoAll(ctx, r.cfg, conns, rep)
	}
	if left := closeAll(all); left > 0 {
		fmt.Fprintf(r.notes, "loadgen: %d connections still closing after %s (a dial the server never answered)\n", left, sioclient.DefaultCloseTimeout)
	}
	return true
}

// Finish puts the server's view beside the client's and judges them.
func (r *run) Finish(_ context.Context, f *scenario.Frame) *Report {
	rep, cfg := r.rep, r.cfg
	rep.ClientCPUSeconds = f.ClientCPU
	judge := verdict.Run{Attempts: cfg.N, Connected: rep.Connected, Deadline: cfg.Deadline, Sent: -1, Received: -1,
		ClientCPU: f.ClientCPU, Window: f.Window, ServerCPU: -1}
	if cfg.Echo {
		judge.Sent, judge.Received = int64(rep.Connected), int64(rep.Echoed) // one event each way per echo
	}
	switch {
	case f.After == nil:
	case f.After.Err != nil:
		rep.ServerError = fmt.Sprintf("no /stats from %s after the run: %v", cfg.Admin, f.After.Err)
		fmt.Fprintf(r.notes, "loadgen: %s\n", rep.ServerError)
	default:
		before, after := scenario.Pair(f.Before, f.After)
		rep.Server = serverView(cfg.Admin, before.Stats, after.Stats)
		rep.Server.Replicas = cfg.ReplicasOf(f.Before, f.After)
		judge.ServerCPU = f.ServerCPU()
	}
	rep.Verdicts = f.Judge(judge)
	rep.Shard = f.ShardPart()
	nameRefusals(rep.Errors, scenario.Diff(f.Before, f.After), f.Target.Config)
	return rep
}

// handshakeGCPercent is the garbage collector's target during the load
// when GOGC is not set. Each handshake allocates its client's objects
// (Manager, Engine.IO socket, transport, emitters, queues, buffers) at
// once and most of them live until the run closes them: at the default of
// 100 the collector ran over and over during the burst, marking the same
// live connections each time, for about a tenth of the client's CPU. At
// 400 the heap may grow to five times what is live before a collection;
// loadgen/README.md gives the memory this costs.
const handshakeGCPercent = 400

// badHandshake is the Socket.IO client's WebSocket transport's error for
// an upgrade the target refused: it drops the HTTP status and the reason.
const badHandshake = "websocket: bad handshake"

// nameRefusals names the refusals the client could not: when the server
// rejected at least as many handshakes at its -max-conns cap, with no
// -fault-reject fault among them, they were 503s at the cap; else they
// are said to be refusals of unknown status.
func nameRefusals(errs map[string]int, server *protocol.Stats, config map[string]string) {
	n := errs[badHandshake]
	if n == 0 {
		return
	}
	delete(errs, badHandshake)
	capped := config["max-conns"] != "" && config["max-conns"] != "0"
	if server != nil && capped && server.Handshakes[protocol.ResultRejected] >= uint64(n) && server.Faults[faults.KindReject] == 0 {
		errs[target.KindAtCap] += n
		return
	}
	errs["upgrade refused (the Socket.IO client's WebSocket transport does not say the HTTP status)"] += n
}

// connectAll starts every connection at the same moment and waits until each
// has connected, failed, or run out of the deadline. It returns the connected
// ones, all the ones to close, their handshake latencies (µs) and the
// duration of the phase; rep gets the counts and the samples of every second
// (handshakes completed in it, and their latency). A progress bar counts
// them on notes when it is a terminal.
func connectAll(ctx context.Context, cfg Config, opts sioclient.Options, rep *Report, notes io.Writer) (conns, all []*sioclient.Conn, lat *hdrhistogram.Histogram, total time.Duration) {
	bar := progress.Count(notes, cfg.N, "handshakes")
	out := make([]outcome, cfg.N)
	// The connections start one after another from one goroutine per
	// core, each timed from its own start (Dial) to its outcome (Await's
	// callback, on the client's goroutine that saw the CONNECT, or the
	// deadline's). A goroutine per connection blocked in Wait cost a stack
	// grown through Dial for each, and a wakeup to read the clock.
	var wg sync.WaitGroup
	wg.Add(cfg.N)
	var next atomic.Int64
	dial := func(deadline context.Context) {
		for ctx.Err() == nil {
			i := int(next.Add(1)) - 1
			if i >= cfg.N {
				return
			}
			t0 := time.Now()
			conn, err := sioclient.Dial(opts)
			if err != nil {
				out[i] = outcome{err: err, latency: time.Since(t0), at: time.Now()}
				bar.Add(1)
				wg.Done()
				continue
			}
			conn.Await(deadline, func(err error) {
				t1 := time.Now()
				out[i] = outcome{conn: conn, latency: t1.Sub(t0), at: t1, err: err}
				bar.Add(1)
				wg.Done()
			})
			// Let the transport's goroutine, just made runnable, dial
			// now, as it did when this connection's goroutine blocked.
			runtime.Gosched()
		}
	}
	// The deadline runs from the start the total is measured from: a run
	// that used its whole deadline reports a total of at least it.
	start := time.Now()
	deadline, cancel := context.WithDeadline(ctx, start.Add(cfg.Deadline))
	defer cancel()
	dialers := min(runtime.GOMAXPROCS(0), cfg.N)
	var dwg sync.WaitGroup
	for range dialers {
		dwg.Go(func() { dial(deadline) })
	}
	dwg.Wait()
	// Interrupted before every connection started: the rest never do, and
	// count as interrupted.
	for i := int(min(next.Load(), int64(cfg.N))); i < cfg.N; i++ {
		out[i] = outcome{err: context.Cause(ctx), at: time.Now()}
		bar.Add(1)
		wg.Done()
	}
	wg.Wait()
	total = time.Since(start)
	bar.Done()
	conns, all, lat = sortOutcomes(out, start, total, rep)
	rep.Connected = len(conns)
	rep.Failed = cfg.N - len(conns)
	return conns, all, lat, total
}

// outcome is how one connection's handshake ended.
type outcome struct {
	conn    *sioclient.Conn
	latency time.Duration
	at      time.Time // when it connected or failed
	err     error
}

// sortOutcomes sorts the outcomes of a phase that began at start and lasted
// total into the connected ones, all the ones to close, and their
// latencies (µs); rep gets the errors and the samples of every second.
func sortOutcomes(out []outcome, start time.Time, total time.Duration, rep *Report) (conns, all []*sioclient.Conn, lat *hdrhistogram.Histogram) {
	lat = protocol.NewHistogram()
	tl := timeline.New(start)
	for _, o := range out {
		if o.conn != nil {
			all = append(all, o.conn)
		}
		if o.err != nil {
			rep.Errors[errorKey(o.err)]++
			tl.Error(o.at)
			continue
		}
		conns = append(conns, o.conn)
		_ = lat.RecordValue(max(1, o.latency.Microseconds())) // beyond 10 min is out of range, and impossible here
		tl.Record(o.at, o.latency)
	}
	rep.Samples = tl.Samples(total)
	return conns, all, lat
}

// echoAll emits `echo` once on every connected socket, all at once, and
// counts the acks that carry the payload back within the deadline.
func echoAll(ctx context.Context, cfg Config, conns []*sioclient.Conn, rep *Report) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { errs[i] = c.Echo(ctx, fmt.Sprintf("echo-%d", i)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			rep.Echoed++
			continue
		}
		if rep.EchoErrors == nil {
			rep.EchoErrors = map[string]int{}
		}
		rep.EchoErrors[errorKey(err)]++
	}
}

// closeAll closes every connection at once and waits for them; it returns
// how many gave up waiting (see sioclient.Conn.Close).
func closeAll(conns []*sioclient.Conn) int {
	var left atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			if c.Close() != nil {
				left.Add(1)
			}
		})
	}
	wg.Wait()
	return int(left.Load())
}

// localAddr matches the local end of a TCP error ("read tcp
// 127.0.0.1:54321->127.0.0.1:8080: ..."), different for every connection.
var localAddr = regexp.MustCompile(`tcp (\[[0-9a-fA-F:.]+\]|[0-9.]+):[0-9]+->`)

// errorKey is the message an error is grouped by.
func errorKey(err error) string {
	switch {
	case errors.Is(err, sioclient.ErrDeadline):
		return sioclient.ErrDeadline.Error()
	case errors.Is(err, context.Canceled):
		return "interrupted"
	}
	var refused *target.Refused
	if errors.As(err, &refused) {
		return refused.Kind()
	}
	text := localAddr.ReplaceAllString(err.Error(), "tcp ${1}->")
	if strings.Contains(text, "HTTP 503") && strings.Contains(text, "-max-conns") {
		return target.KindAtCap // a refusal whose type the client did not keep
	}
	return text
}

// clientVersion is the version of the zishang520 client built in.
func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == clientModule {
				return d.Version
			}
		}
	}
	return "unknown"
}

package sustain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/loadgen/internal/proc"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/loadgen/siolite"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/schedlat"
)

// settleWait bounds the wait for the server to see the run's connections
// go before the after snapshot.
const settleWait = 5 * time.Second

// Run holds the clients through the steps and reports each. Notes for the
// user go to notes. It returns an error only when the run could not take
// place at all.
func Run(ctx context.Context, cfg Config, notes io.Writer) (*Report, error) {
	opts := sioclient.Options{URL: cfg.URL, Transport: sioclient.WebSocket, OpenTimeout: cfg.Deadline + time.Second,
		AckTimeout: cfg.AckTimeout, TLS: cfg.TLS.Config()}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if files, err := proc.OpenFiles(); err == nil {
		if err := files.Check("n", cfg.N); err != nil {
			return nil, err
		}
	}
	r := &run{cfg: cfg, opts: opts, notes: notes, queue: make(chan *client, cfg.N),
		emitLat: protocol.NewHistogram(), pushLat: protocol.NewHistogram()}
	r.counts.errors = map[string]int{}
	return scenario.Run(ctx, scenario.Options{Admin: cfg.Admin, Settle: settleWait, Scenario: "sustain", Shard: cfg.Shard}, r)
}

// run is one run: the clients, the counts of the current step, and the
// steps done.
type run struct {
	cfg   Config
	opts  sioclient.Options
	notes io.Writer

	clientsMu sync.RWMutex // clients grows in Load while the pusher reads it
	clients   []*client
	queueMu   sync.Mutex   // orders the last enqueue before the queue's close
	queue     chan *client // clients waiting for a dialer
	// connecting: clients in the queue or in a connect; a step's end
	// reads it, the connects the load client had not finished.
	connecting atomic.Int64
	held       atomic.Int64
	stopping   atomic.Bool
	start      time.Time

	counts  counts
	latMu   sync.Mutex
	emitLat *hdrhistogram.Histogram // this step's, µs
	pushLat *hdrhistogram.Histogram
	// emitHops and pushHops split this step's by hop (-hops).
	emitHops, pushHops hopHists
	sched              []protocol.Bucket // this process's scheduling latency at the step's start
	loop               *siolite.Loop     // -loop's, nil on goroutines
	pacer              *pacer            // fires the clients' emits

	rep *Report
}

// counts are the current step's; take swaps them out at its end.
type counts struct {
	attempts, connected, reconnected, lost, churned atomic.Int64
	emits, acks, ackErrors, joins                   atomic.Int64
	pushesSent, pushesReceived                      atomic.Int64
	mu                                              sync.Mutex
	errors                                          map[string]int
}

func (c *counts) failed(key string) {
	c.mu.Lock()
	c.errors[key]++
	c.mu.Unlock()
}

func (r *run) enqueue(c *client) {
	r.queueMu.Lock()
	defer r.queueMu.Unlock()
	if !r.stopping.Load() {
		r.connecting.Add(1)
		r.queue <- c // room for every client: a client is queued at most once at a time
	}
}

// stop ends the queue: a retry's timer that fires later queues nothing.
func (r *run) stop() {
	r.queueMu.Lock()
	defer r.queueMu.Unlock()
	r.stopping.Store(true)
	close(r.queue)
}

func (r *run) Prepare(context.Context, *scenario.Frame) error { return nil }

// Load runs the steps: at each one's start the clients it adds are
// queued for the dialers (and, after the first, -churn of the held ones
// leave and come back), then the step's figures are taken at its end.
func (r *run) Load(ctx context.Context, f *scenario.Frame) bool {
	cfg := r.cfg
	if !r.waitStart(ctx) {
		return false
	}
	r.sched = schedlat.Buckets()
	if cfg.Client == ClientLean && cfg.Loop {
		loop, err := siolite.NewLoop()
		if err != nil {
			fmt.Fprintf(r.notes, "loadgen: %v; the connections are read on goroutines\n", err)
		}
		r.loop = loop
	}
	r.rep = newReport(cfg)
	r.pacer = newPacer()
	if f.Before != nil && f.Before.Err != nil {
		r.rep.ServerError = fmt.Sprintf("no /stats from %s: %v", cfg.Admin, f.Before.Err)
	}
	var wg sync.WaitGroup
	for range cfg.Inflight {
		wg.Go(func() { r.dialer(ctx) })
	}
	stopSampling := r.sampleHeld()
	stopPushing := r.push()
	for k := range cfg.Steps {
		stepStart, cpu0 := time.Now(), proc.SelfCPUSeconds()
		if k > 0 && cfg.Churn > 0 {
			r.churn()
		}
		for len(r.clients) < cfg.target(k) {
			id := cfg.offset + len(r.clients)
			c := &client{id: id, room: "room-" + strconv.Itoa(id%cfg.Rooms), r: r}
			r.clientsMu.Lock()
			r.clients = append(r.clients, c)
			r.clientsMu.Unlock()
			r.enqueue(c)
		}
		end := r.start.Add(time.Duration(k+1) * cfg.StepDuration)
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(end)):
		}
		r.rep.Steps = append(r.rep.Steps, r.take(k, stepStart, cpu0))
		if ctx.Err() != nil {
			break
		}
	}
	stopPushing()
	r.stop()
	r.pacer.close()
	wg.Wait()
	r.lateConnects()
	stopSampling()
	r.rep.Ever = r.ever()
	r.closeAll()
	if r.loop != nil {
		_ = r.loop.Close()
	}
	return ctx.Err() == nil
}

// waitStart waits for -start-at and sets the run's start, from which
// every step's end is counted: -start-at itself, even when this process
// came later, so that its steps end with the other shards'.
func (r *run) waitStart(ctx context.Context) bool {
	r.start = time.Now()
	at := r.cfg.StartAt
	if at.IsZero() {
		return true
	}
	if late := time.Since(at); late > 0 {
		fmt.Fprintf(r.notes, "loadgen: started %s after -start-at: the first step is that much shorter\n", late.Round(time.Millisecond))
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(at)):
	}
	r.start = at
	return true
}

// lateConnects gives the last step the outcomes of the connects still
// running at its end, which it counted the attempts of: a connect that
// succeeded late is not a failed one.
func (r *run) lateConnects() {
	n := len(r.rep.Steps)
	if n == 0 {
		return
	}
	last, c := &r.rep.Steps[n-1], &r.counts
	last.Attempts += c.attempts.Swap(0)
	last.Connected += c.connected.Swap(0)
	last.Reconnected += c.reconnected.Swap(0)
	c.mu.Lock()
	for e, k := range c.errors {
		last.Errors[e] += k
	}
	c.errors = map[string]int{}
	c.mu.Unlock()
}

// dialer connects the queued clients, one at a time.
func (r *run) dialer(ctx context.Context) {
	for c := range r.queue {
		if !r.stopping.Load() && ctx.Err() == nil {
			c.dial(ctx)
		}
		r.connecting.Add(-1)
	}
}

// churn makes -churn of the held clients leave and connect again.
func (r *run) churn() {
	want := int(float64(r.held.Load()) * r.cfg.Churn)
	for _, c := range r.clients {
		if want == 0 {
			return
		}
		if conn := c.leave(); conn != nil {
			want--
			r.counts.churned.Add(1)
			go conn.close()
			r.enqueue(c)
		}
	}
}

// closeAll closes every connection at once and waits for them.
func (r *run) closeAll() {
	var wg sync.WaitGroup
	for _, c := range r.clients {
		if conn := c.leave(); conn != nil {
			wg.Go(conn.close)
		}
	}
	wg.Wait()
}

// ever is how many clients have been connected at least once.
func (r *run) ever() int {
	n := 0
	for _, c := range r.clients {
		c.mu.Lock()
		if c.ever {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// sampleHeld records the clients held at every second of the run, for
// the time to recover from a loss.
func (r *run) sampleHeld() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				r.rep.HeldPerSecond = append(r.rep.HeldPerSecond, r.held.Load())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// push emits broadcast-room at -push-rate from the held clients in turn,
// to the rooms in turn; the payload carries the send time (µs since the
// epoch, exact in a JSON number) for the receivers' latency.
func (r *run) push() (stop func()) {
	done := make(chan struct{})
	if r.cfg.PushRate <= 0 {
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Duration(float64(time.Second) / r.cfg.PushRate))
		defer tick.Stop()
		next, seq := 0, 0
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			r.clientsMu.RLock()
			clients := r.clients
			r.clientsMu.RUnlock()
			for range len(clients) {
				c := clients[next%len(clients)]
				next++
				c.mu.Lock()
				conn := c.conn
				c.mu.Unlock()
				if conn == nil {
					continue
				}
				room := "room-" + strconv.Itoa(seq%r.cfg.Rooms)
				seq++
				push := map[string]any{"t": time.Now().UnixMicro(), "from": c.id}
				if r.cfg.Hops {
					push = askStamps(time.Now())
					push["from"] = c.id
				}
				_ = conn.emit("broadcast-room", room, push)
				r.counts.pushesSent.Add(1)
				break
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// onPush counts a "broadcast" event and times it from its payload's send
// time (µs since the epoch; 0 when it has none), and by hop when it has
// hop stamps.
func (r *run) onPush(st stamps) {
	r.counts.pushesReceived.Add(1)
	if st.T <= 0 {
		return
	}
	arrival := time.Now()
	us := max(1, arrival.UnixMicro()-st.T)
	r.latMu.Lock()
	_ = r.pushLat.RecordValue(us)
	r.latMu.Unlock()
	r.pushHops.record(st, arrival)
}

// onAck records an emit's ack.
func (r *run) onAck(d time.Duration, err error) {
	if err != nil {
		r.counts.ackErrors.Add(1)
		r.counts.failed("ack: " + err.Error())
		return
	}
	// The count and the histogram change together, under the lock take
	// swaps both with, so a step's acks are exactly its latency samples.
	r.latMu.Lock()
	r.counts.acks.Add(1)
	_ = r.emitLat.RecordValue(max(1, d.Microseconds()))
	r.latMu.Unlock()
}

// Finish puts the server's view beside the client's and judges them.
func (r *run) Finish(_ context.Context, f *scenario.Frame) *Report {
	rep := r.rep
	if rep == nil {
		rep = newReport(r.cfg)
	}
	rep.ClientCPUSeconds = f.ClientCPU
	rep.total()
	judge := verdict.Run{Attempts: int(rep.Attempts), Connected: int(rep.Connected), Deadline: r.cfg.Deadline,
		Sent: -1, Received: -1, ClientCPU: f.ClientCPU, Window: f.Window, ServerCPU: -1}
	if rep.Server = scenario.Diff(f.Before, f.After); rep.Server != nil {
		judge.ServerCPU = f.ServerCPU()
	}
	rep.Verdicts = f.Judge(judge)
	return rep
}

// localAddr matches the local end of a TCP error, different for every
// connection.
var localAddr = regexp.MustCompile(`tcp (\[[0-9a-fA-F:.]+\]|[0-9.]+):[0-9]+->`)

// errorKey is the message a failed connect is grouped by.
func errorKey(err error) string {
	switch {
	case errors.Is(err, sioclient.ErrDeadline), errors.Is(err, siolite.ErrDeadline):
		return "connect: " + sioclient.ErrDeadline.Error()
	case errors.Is(err, context.Canceled):
		return "connect: interrupted"
	}
	return "connect: " + localAddr.ReplaceAllString(err.Error(), "tcp ${1}->")
}

// rss is this process's resident memory in bytes, 0 when unknown.
func rss() float64 {
	b, _ := proc.ResidentBytes(os.Getpid())
	return b
}

package echo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/loadgen/internal/proc"
	"github.com/knowngood/knowngood/loadgen/internal/progress"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Error kinds. dial (or, for an upgrade the target refused, its HTTP
// status and reason: target.KindAtCap...), write and read count
// connections that ended so; mismatch and lost count messages.
const (
	kindDial     = "dial"
	kindWrite    = "write"
	kindRead     = "read"
	kindMismatch = "mismatch"
	kindLost     = "lost"
)

// dialParallel bounds the dials in progress at once.
const dialParallel = 256

// Run opens cfg.Conns connections, runs the traffic of cfg.Mode for the
// warmup and the window, and reports on the window. Notes for the user (an
// unreachable /stats, the open-files budget) go to notes, one line each. It
// returns an error only when the run could not take place at all.
func Run(ctx context.Context, cfg Config, notes io.Writer) (*Report, error) {
	if _, err := proc.CheckFiles(notes, "c", cfg.Conns, false); err != nil {
		return nil, err
	}
	if _, err := cfg.CheckURL(ctx, notes, cfg.Timeout); err != nil {
		return nil, err
	}
	return runDial(ctx, cfg, notes, dialer(cfg))
}

// window is the run's timeline, the same for every connection: traffic
// from start, measured from `from` to `to`. stop is closed at `to`, or
// earlier when the run is interrupted.
type window struct {
	start, from, to time.Time
	stop            <-chan struct{}
}

// measured reports whether a message sent (or due) at t is in the figures.
func (w window) measured(t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// sample is what is read at each end of the window.
type sample struct {
	clientCPU float64
	server    *scenario.Snapshot // nil without an admin listener
	procCPU   *float64
	procErr   error
}

// settleWait bounds the wait, after the closes, for the target to see its
// connections go.
const settleWait = 5 * time.Second

// runDial runs the scenario with dial for its connections. The verdicts
// compare the whole run, dials to closes, on both sides (the skeleton's
// /stats reads before the dials and after the closes): the window's
// snapshots are each a request long, and messages flow meanwhile.
func runDial(ctx context.Context, cfg Config, notes io.Writer, dial dialFunc) (*Report, error) {
	r := &run{cfg: cfg, notes: notes, dial: dial, rep: newReport(cfg), errs: &tally.Errors{}}
	return scenario.Run(ctx, scenario.Options{Admin: cfg.Admin, Settle: settleWait, Scenario: "echo", Shard: cfg.Shard}, r)
}

// run is the scenario's part of a run: the connections, the traffic, and
// the window's own samples.
type run struct {
	cfg   Config
	notes io.Writer
	dial  dialFunc
	rep   *Report
	errs  *tally.Errors

	conns    []msgConn
	workers  []*worker
	received int64  // echoes read, matching or not, over the whole run
	before   sample // at the start of the window
	after    sample // at its end
}

func (r *run) Prepare(context.Context, *scenario.Frame) error { return nil }

// Load dials, runs the traffic through the warmup and the window, and
// closes; false when nothing connected or the run was interrupted.
func (r *run) Load(ctx context.Context, f *scenario.Frame) bool {
	bar := progress.Count(r.notes, r.cfg.Conns, "connecting")
	r.conns = dialAll(ctx, r.cfg, r.dial, r.errs, bar)
	bar.Done()
	r.rep.Connected = len(r.conns)
	if len(r.conns) == 0 {
		r.rep.Errors = r.errs.Map()
		return false
	}
	start := time.Now()
	stop := make(chan struct{})
	win := window{start: start, from: start.Add(r.cfg.Warmup), to: start.Add(r.cfg.Warmup + r.cfg.Duration), stop: stop}
	var closing atomic.Bool // set once the connections are being closed: their errors are ours
	tl := timeline.New(win.from)
	wait, stopLoops := r.startWorkers(win, tl, &closing)
	end, interrupted := r.measure(ctx, f.Target, win)
	close(stop)

	// The last echoes: wait for them up to cfg.Timeout, then close the
	// connections, which ends every call still blocked.
	drained := make(chan struct{})
	go func() { wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(r.cfg.Timeout):
	case <-ctx.Done():
	}
	closing.Store(true)
	closeAll(r.conns)
	<-drained
	stopLoops()
	r.tally(win, end, interrupted, tl)
	return !interrupted
}

// startWorkers starts one worker per connection, in cfg.Mode: wait waits
// for them to end, and stop, called after closeAll, stops what they
// started.
func (r *run) startWorkers(win window, tl *timeline.Timeline, closing *atomic.Bool) (wait, stop func()) {
	pl := newPayload(r.cfg.Size, r.cfg.Text)
	r.workers = make([]*worker, len(r.conns))
	for i, c := range r.conns {
		r.workers[i] = &worker{id: i, conn: c, pl: pl, errs: r.errs, closing: closing, lat: protocol.NewHistogram(), late: protocol.NewHistogram(),
			tl: tl, seconds: tl.Local()}
	}
	if r.cfg.Mode == Pipelined {
		if l, ok := r.startLoops(win, r.workers, r.cfg.Inflight); ok {
			return l.wait, l.stop
		}
	}
	var wg sync.WaitGroup
	for i, w := range r.workers {
		switch r.cfg.Mode {
		case Sync:
			wg.Go(func() { w.runSync(win) })
		case Pipelined:
			wg.Go(func() { w.runPipelined(win, r.cfg.Inflight) })
		case Rate:
			// Connection i's messages are due every len(conns)/rate
			// seconds, offset by i/rate: evenly spread in total.
			period := float64(time.Second) * float64(len(r.conns)) / float64(r.cfg.Rate)
			first := win.start.Add(time.Duration(float64(i) * float64(time.Second) / float64(r.cfg.Rate)))
			wg.Go(func() { w.runRate(win, first, period) })
		}
	}
	return wg.Wait, func() {}
}

// measure waits through the warmup and the window, sampling both sides at
// each end of the window; end is when it ended.
func (r *run) measure(ctx context.Context, t *scenario.Target, win window) (end time.Time, interrupted bool) {
	bar := progress.Timed(r.notes, r.cfg.Warmup+r.cfg.Duration, "warmup and window")
	defer bar.Done()
	interrupted = !sleepUntil(ctx, win.from)
	if !interrupted {
		r.before = takeSample(ctx, t, r.cfg.PID)
		interrupted = !sleepUntil(ctx, win.to)
	}
	end = time.Now()
	if !interrupted {
		r.after = takeSample(ctx, t, r.cfg.PID)
	}
	return end, interrupted
}

// tally puts the workers' counts into the report.
func (r *run) tally(win window, end time.Time, interrupted bool, tl *timeline.Timeline) {
	rep := r.rep
	rep.Interrupted = interrupted
	rep.WindowSeconds = max(0, end.Sub(win.from).Seconds())
	if end.After(win.to) {
		rep.WindowSeconds = r.cfg.Duration.Seconds()
	}
	lat, late := protocol.NewHistogram(), protocol.NewHistogram()
	for _, w := range r.workers {
		w.record()
		w.seconds.Flush()
		lat.Merge(w.lat)
		late.Merge(w.late)
		rep.Messages += w.measured
		rep.Sent += w.sent
		rep.BehindSchedule += w.behind
		r.received += w.received
		if interrupted { // cut off by the user, not lost
			continue
		}
		r.errs.Add(kindLost, int(w.sent-w.received), fmt.Errorf("connection %d: %d messages without an echo when it closed (-timeout %s after the window, or a connection error first)", w.id, w.sent-w.received, r.cfg.Timeout))
	}
	rep.Errors = r.errs.Map()
	if rep.WindowSeconds > 0 {
		rep.MessagesPerSecond = float64(rep.Messages) / rep.WindowSeconds
	}
	rep.setLatency(lat, late)
	if r.cfg.Shard.Set() {
		rep.LatencyHistogram, rep.SendLateHistogram = protocol.Buckets(lat), protocol.Buckets(late)
	}
	rep.Samples = tl.Samples(time.Duration(rep.WindowSeconds * float64(time.Second)))
}

// Finish adds the server's view of the window and the verdicts, unless
// nothing connected or the run was interrupted.
func (r *run) Finish(_ context.Context, f *scenario.Frame) *Report {
	rep := r.rep
	if len(r.conns) == 0 || rep.Interrupted {
		return rep
	}
	rep.ClientCPUSeconds = r.after.clientCPU - r.before.clientCPU
	rep.Server, rep.ServerError = serverView(r.cfg, r.before, r.after)
	if rep.ServerError != "" {
		fmt.Fprintf(r.notes, "loadgen: %s\n", rep.ServerError)
	}
	// The connections and the messages over the whole run, the CPU over
	// the window.
	v := verdict.Run{Attempts: r.cfg.Conns, Connected: rep.Connected, Deadline: r.cfg.Timeout, Sent: rep.Sent, Received: r.received,
		ClientCPU: rep.ClientCPUSeconds, Window: time.Duration(rep.WindowSeconds * float64(time.Second)), ServerCPU: -1}
	if u, _ := target.ParseURL(r.cfg.URL); u.TCP { // checked by ParseFlags
		v.Unit = verdict.UnitTCP // raw TCP: connections, not upgrades; reads, not messages
	}
	if rep.Server != nil && rep.Server.CPUSeconds != nil {
		v.ServerCPU = *rep.Server.CPUSeconds
	}
	rep.Verdicts = f.Judge(v)
	rep.Shard = f.ShardPart()
	return rep
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func takeSample(ctx context.Context, t *scenario.Target, pid int) sample {
	s := sample{clientCPU: proc.SelfCPUSeconds()}
	if pid != 0 {
		cpu, err := proc.CPUSeconds(pid)
		s.procCPU, s.procErr = &cpu, err
	}
	s.server = t.Snapshot(ctx)
	return s
}

// dialAll opens the connections, dialParallel at a time; failures are
// counted in errs, and every dial on bar.
func dialAll(ctx context.Context, cfg Config, dial dialFunc, errs *tally.Errors, bar *progress.Bar) []msgConn {
	conns := make([]msgConn, cfg.Conns)
	sem := make(chan struct{}, dialParallel)
	var wg sync.WaitGroup
	for i := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem; bar.Add(1) }()
			dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			defer cancel()
			c, err := dial(dctx)
			if err != nil {
				errs.Add(target.KindOr(err, kindDial), 1, err)
				return
			}
			conns[i] = c
		})
	}
	wg.Wait()
	out := conns[:0]
	for _, c := range conns {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// closeAll closes the connections, a few at a time: a WebSocket close
// writes a frame first, which may wait up to a second on a stuck one.
func closeAll(conns []msgConn) {
	target.EachAtMost(conns, 64, func(_ int, c msgConn) { c.close() })
}

// worker drives one connection. In pipelined and rate modes one goroutine
// sends and another receives: sent and behind belong to the sender, the
// rest to the receiver, and all are read once both have ended.
type worker struct {
	id      int
	conn    msgConn
	pl      payload
	errs    *tally.Errors
	closing *atomic.Bool

	sent     int64 // messages written
	behind   int64 // rate: messages due before the end but never sent
	received int64 // echoes read, matching or not
	measured int64 // matching echoes of messages sent in the window
	lat      *hdrhistogram.Histogram
	// late (rate mode, the sender's): how long after its due time each
	// window message was written; the client's own share of the latency.
	late *hdrhistogram.Histogram
	// seconds (the receiver's) samples the window's echoes by the second
	// they were sent in; the errors go to tl.
	seconds *timeline.Local
	tl      *timeline.Timeline
	run     latencyRun // the receiver's latencies not yet recorded
}

// fail counts the error that ended the connection, unless the run was
// closing it.
func (w *worker) fail(kind string, err error) {
	if !w.closing.Load() {
		w.errs.Add(kind, 1, fmt.Errorf("connection %d: %w", w.id, err))
		w.tl.Error(time.Now())
	}
}

// receive reads one echo and checks it against message seq, sent (or due)
// at t. It returns false when the connection is done.
func (w *worker) receive(in []byte, seq uint64, t time.Time, win window) bool {
	n, err := w.conn.recv(in)
	if err != nil && !errors.Is(err, errMismatch) {
		w.fail(kindRead, err)
		return false
	}
	w.echoed(in, n, err, seq, t, win, time.Now())
	return true
}

// echoed takes an echo of n bytes (in holds the first of them), read at
// now, of message seq, sent (or due) at t; err, when not nil, wraps
// errMismatch.
func (w *worker) echoed(in []byte, n int, err error, seq uint64, t time.Time, win window, now time.Time) {
	w.received++
	if err == nil {
		err = w.pl.check(in, n, seq)
	}
	if err != nil {
		w.errs.Add(kindMismatch, 1, fmt.Errorf("connection %d, message %d: %w", w.id, seq, err))
		w.tl.Error(now)
		return
	}
	if win.measured(t) {
		w.measured++
		// Beyond the histogram's 10 minutes is out of range, and
		// impossible within -timeout.
		us := max(1, now.Sub(t).Microseconds())
		if r := &w.run; r.n > 0 && r.us == us && r.t.Equal(t) {
			r.n++
			return
		}
		w.record()
		w.run = latencyRun{t: t, us: us, n: 1}
	}
}

// latencyRun is a run of echoes with the same latency, of messages sent
// at the same time: a pipelined batch, read at once. They go to the
// histograms together (a histogram takes a count with a value), the same
// counts as one by one.
type latencyRun struct {
	t  time.Time
	us int64
	n  int64
}

// record puts the current run of latencies into the histograms; the
// receiver calls it once more when it is done.
func (w *worker) record() {
	if r := w.run; r.n > 0 {
		_ = w.lat.RecordValues(r.us, r.n)
		w.seconds.RecordN(r.t, r.us, r.n)
		w.run.n = 0
	}
}

// send writes message seq alone; false when the connection is done.
func (w *worker) send(out []byte, seq uint64) bool { return w.sendBatch(out, seq, 1) }

// sendBatch writes messages seq to seq+n-1 with one write; false when the
// connection is done.
func (w *worker) sendBatch(out []byte, seq uint64, n int) bool {
	for i := range n {
		w.pl.fill(out, seq+uint64(i))
		w.conn.queue(out)
	}
	if err := w.conn.flush(); err != nil {
		w.fail(kindWrite, err)
		return false
	}
	w.sent += int64(n)
	return true
}

// runSync sends, waits for the echo, and repeats until the window ends.
func (w *worker) runSync(win window) {
	out, in := make([]byte, len(w.pl.pattern)), make([]byte, len(w.pl.pattern))
	for seq := uint64(0); !stopped(win.stop); seq++ {
		t := time.Now()
		if !w.send(out, seq) || !w.receive(in, seq, t, win) {
			return
		}
	}
}

// batchBytes bounds one pipelined write (one message at least).
const batchBytes = 64 << 10

// runPipelined keeps up to inflight messages awaiting their echo: whenever
// some are free, it sends them all in one write, timed together.
func (w *worker) runPipelined(win window, inflight int) {
	cr := newCredits(inflight)
	q, done := w.startReceiver(win, cr)
	defer func() { q.close(); <-done }()
	out := make([]byte, len(w.pl.pattern))
	most := min(inflight, max(1, batchBytes/len(out)))
	for seq := uint64(0); ; {
		n := cr.take(most, win.stop, done)
		if n == 0 || stopped(win.stop) {
			return
		}
		t := time.Now()
		if !w.sendBatch(out, seq, n) {
			return
		}
		q.push(sentMsg{seq: seq, n: n, at: t})
		seq += uint64(n)
	}
}

// runRate sends message k at first + k*period (nanoseconds), never waiting
// for echoes: a message sent late (a blocked write) keeps its due time, from
// which its latency counts. The messages due before the end that were never
// sent are counted as behind.
func (w *worker) runRate(win window, first time.Time, period float64) {
	q, done := w.startReceiver(win, nil)
	defer func() { q.close(); <-done }()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	out := make([]byte, len(w.pl.pattern))
	defer func() {
		limit := time.Now()
		if limit.After(win.to) {
			limit = win.to
		}
		if due := limit.Sub(first); due > 0 {
			w.behind = max(0, int64(math.Ceil(float64(due)/period))-w.sent)
		}
	}()
	for seq := uint64(0); ; seq++ {
		due := first.Add(time.Duration(float64(seq) * period))
		if !due.Before(win.to) {
			return
		}
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-win.stop:
				return
			case <-done:
				return
			}
		} else if stopped(win.stop) {
			return
		}
		if win.measured(due) {
			_ = w.late.RecordValue(max(1, time.Since(due).Microseconds()))
		}
		if !w.send(out, seq) {
			return
		}
		q.push(sentMsg{seq: seq, n: 1, at: due})
	}
}

// startReceiver starts the goroutine that reads the echoes of the messages
// pushed on the returned queue, in order; it gives back a credit after each
// when cr is not nil. done is closed when it ends: the queue closed and
// empty, or the connection done.
func (w *worker) startReceiver(win window, cr *credits) (q *fifo, done chan struct{}) {
	q, done = newFifo(), make(chan struct{})
	go func() {
		defer close(done)
		in := make([]byte, len(w.pl.pattern))
		for {
			m, ok := q.pop()
			if !ok {
				return
			}
			for i := range uint64(m.n) {
				if !w.receive(in, m.seq+i, m.at, win) {
					return
				}
				if cr != nil {
					cr.give()
				}
			}
		}
	}()
	return q, done
}

// sentMsg is a run of n messages awaiting their echo: the first one's
// sequence number, and when they were sent (due, in rate mode).
type sentMsg struct {
	seq uint64
	n   int
	at  time.Time
}

// credits are the free places among a pipelined connection's in-flight
// messages: the sender takes all there are, the receiver gives one back per
// echo, and wakes the sender only when it waits, so that neither pays for a
// channel operation per message.
type credits struct {
	free    atomic.Int64
	waiting atomic.Bool
	wake    chan struct{} // one pending wake-up at most
}

func newCredits(n int) *credits {
	c := &credits{wake: make(chan struct{}, 1)}
	c.free.Store(int64(n))
	return c
}

// take waits for a free credit and takes up to most; 0 when stop or done
// came first. Only one goroutine takes.
func (c *credits) take(most int, stop, done <-chan struct{}) int {
	for {
		if n := c.free.Load(); n > 0 {
			n = min(n, int64(most))
			c.free.Add(-n)
			return int(n)
		}
		// Say so, then look again: a give between the two looks sees
		// waiting and wakes us.
		c.waiting.Store(true)
		if c.free.Load() > 0 {
			c.waiting.Store(false)
			continue
		}
		select {
		case <-c.wake:
		case <-stop:
			return 0
		case <-done:
			return 0
		}
	}
}

func (c *credits) give() {
	c.free.Add(1)
	if c.waiting.Swap(false) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// fifo is an unbounded queue from one sender to one receiver: rate mode
// must never wait for the receiver.
type fifo struct {
	mu     sync.Mutex
	items  []sentMsg
	head   int
	closed bool
	wake   chan struct{} // one pending wake-up at most
}

func newFifo() *fifo { return &fifo{wake: make(chan struct{}, 1)} }

func (q *fifo) push(m sentMsg) {
	q.mu.Lock()
	q.items = append(q.items, m)
	q.mu.Unlock()
	q.poke()
}

func (q *fifo) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.poke()
}

func (q *fifo) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop waits for the next message; false once the queue is closed and empty.
func (q *fifo) pop() (sentMsg, bool) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			m := q.items[q.head]
			q.head++
			if q.head == len(q.items) { // empty: reuse the array
				q.items, q.head = q.items[:0], 0
			}
			q.mu.Unlock()
			return m, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return sentMsg{}, false
		}
		<-q.wake
	}
}

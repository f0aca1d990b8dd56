package broadcast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/loadgen/internal/proc"
	"github.com/knowngood/knowngood/loadgen/internal/progress"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// Error kinds beyond the dial's.
const (
	kindJoin      = "no echo after connecting"
	kindWrite     = "write"
	kindDropped   = "dropped during the run"
	kindServerErr = "server error message"
	kindUnknown   = "unexpected message"
)

const (
	// closeParallel bounds the closes in progress at once.
	closeParallel = 64
	// shards spreads the latency recording of many readers over several
	// histograms (merged at the end), so that they do not queue on one lock.
	shards = 64
)

// sent is the payload of a broadcast from loadgen: sender, number, send
// time in unix nanoseconds, and padding.
type sent struct {
	S   int    `json:"s"`
	N   uint64 `json:"n"`
	T   int64  `json:"t"`
	Pad string `json:"pad,omitempty"`
}

// Run connects, measures for cfg.Duration, and reports. It returns an
// error only when the run could not take place at all.
func Run(ctx context.Context, cfg Config, notes io.Writer) (*Report, error) {
	total := cfg.Subscribers + cfg.Senders
	if _, err := proc.CheckFiles(notes, "subscribers", total, true); err != nil {
		return nil, err
	}
	u, err := cfg.CheckURL(ctx, notes, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, u: u, notes: notes, rep: newReport(cfg), errs: &tally.Errors{}, rtt: newShardedHist(nil)}
	r.lat = newShardedHist(&r.timeline)
	if r.subs, err = newListeners(r); err != nil {
		return nil, fmt.Errorf("gnet client: %w", err)
	}
	defer r.subs.stop()
	return scenario.Run(ctx, scenario.Options{Admin: cfg.Admin, Scenario: "broadcast", Shard: cfg.Shard}, r)
}

// run is the scenario's part of a run: the members, the broadcasts or
// pushes of the window, and their books.
type run struct {
	cfg   Config
	u     target.URL
	notes io.Writer
	rep   *Report
	errs  *tally.Errors
	lat   *shardedHist // receive latency: broadcasts and pushes in the window
	rtt   *shardedHist // broadcastResult round trips
	// timeline samples the window's deliveries by the second they were
	// sent in; set when the window starts.
	timeline atomic.Pointer[timeline.Timeline]

	members []*member  // index < cfg.Senders: the senders
	subs    *listeners // the subscribers' event loops

	windowStart, windowEnd atomic.Int64 // unix nanoseconds; 0 before they are set
	closing                atomic.Bool
	sentCount              []atomic.Uint64 // per sender: broadcasts written in the window
	pushLo, pushHi         atomic.Uint64   // push seqs seen in the window, over everyone
	// pushBooks: push keeps its accounting under its shard's read lock;
	// awaitDeliveries takes every shard's write lock to check it and, once
	// everything expected has come (or the wait is over), to close the
	// books (pushClosed). A push sent just before the window's end and
	// first seen after that counts neither as expected nor as received:
	// seen by some members only by the time fill reads the figures, it
	// would show as lost for the others.
	pushBooks  [shards]sync.RWMutex
	pushClosed bool
	listeners  atomic.Int64 // the listenerCount every broadcastResult should carry
	mismatches atomic.Int64 // broadcastResults that carried another
	results    atomic.Int64
	others     atomic.Int64 // sharded: deliveries of the other shards' broadcasts
	// otherPushes (broadcast mode): the target's timed pushes that came
	// from the window's start until the close, counted apart from the
	// broadcasts' deliveries.
	otherPushes atomic.Uint64
}

// ours reports whether p is one of this run's (this shard's) broadcasts.
func (r *run) ours(p sent) bool {
	s := p.S - r.cfg.SenderBase
	return s >= 0 && s < max(r.cfg.Senders, 1)
}

// member is one connection: a subscriber, or a sender (index < Senders).
type member struct {
	c      *websocket.Conn // a sender's; nil for a subscriber
	g      gnet.Conn       // a subscriber's (listen.go); nil for a sender
	shard  int             // of the latency histograms
	joined chan struct{}   // closed when its first echo came back
	once   sync.Once
	done   chan struct{} // closed when its reader ends

	mu       sync.Mutex
	last     []uint64 // per sender: last number received, 0 = none
	got      []uint64 // per sender: distinct numbers received in the window
	dups     uint64
	pushLast uint64 // last push seq received in the window
	pushGot  uint64
	pushPast bool // a push sent after the window came, so every one before it did
}

// Prepare connects every member and waits for them to join: the window,
// and the server's figures, start once they are in.
func (r *run) Prepare(ctx context.Context, _ *scenario.Frame) error {
	cfg, rep := r.cfg, r.rep
	r.sentCount = make([]atomic.Uint64, max(cfg.Senders, 1))
	total := cfg.Subscribers + cfg.Senders
	r.members = make([]*member, total)
	start := time.Now()
	pool := &target.BufferPool{}
	bar := progress.Count(r.notes, total, "connecting")
	rep.Batches = target.Ramp(ctx, total, cfg.Batch, cfg.Sources, r.errs, func(ctx context.Context, i int, src netip.Addr) error {
		defer bar.Add(1)
		return r.connect(ctx, i, src, pool)
	})
	rep.ConnectSeconds = time.Since(start).Seconds()
	r.awaitJoins(ctx)
	bar.Done()
	for _, m := range r.members {
		if m != nil {
			rep.Connected++
		}
	}
	rep.Failed = total - rep.Connected
	r.listeners.Store(int64(rep.Connected))
	fmt.Fprintf(r.notes, "loadgen: %d of %d connections joined in %.2fs; measuring for %s\n", rep.Connected, total, rep.ConnectSeconds, cfg.Duration)
	return nil
}

// connect opens member i from src: a subscriber on the gnet client, a
// sender on gorilla, which then asks to join. In TLS (wss://) every member
// is a gorilla connection read by a goroutine of its own: gnet's loops
// read bare sockets, and TLS is not theirs to unwrap.
func (r *run) connect(ctx context.Context, i int, src netip.Addr, pool *target.BufferPool) error {
	cfg := r.cfg
	tracks := max(cfg.Senders, 1)
	m := &member{shard: i % shards, joined: make(chan struct{}), done: make(chan struct{}), last: make([]uint64, tracks), got: make([]uint64, tracks)}
	if (i >= cfg.Senders || cfg.Push) && !r.u.TLS {
		if err := r.subs.dial(ctx, r.u, target.Options{Timeout: cfg.Timeout, Source: src, ReadBuffer: 4096}, m); err != nil {
			return err
		}
		r.members[i] = m
		return nil
	}
	c, err := target.DialWebSocket(ctx, r.u, target.Options{Timeout: cfg.Timeout, Source: src, ReadBuffer: 4096, WriteBuffer: 1024, WriteBufferPool: pool, TLS: cfg.TLS.Config()})
	if err != nil {
		return err
	}
	m.c = c
	r.members[i] = m
	go r.read(m)
	// The target joins a client before it reads its first message:
	// the echo's answer says that this one is in.
	return c.WriteMessage(websocket.TextMessage, []byte(`{"type":"echo","payload":"join"}`))
}

// Load runs the window, then waits for its last deliveries.
func (r *run) Load(ctx context.Context, _ *scenario.Frame) bool {
	cfg, rep := r.cfg, r.rep
	windowStart := time.Now()
	r.timeline.Store(timeline.New(time.Unix(0, windowStart.UnixNano()))) // the send times in the messages are wall clock
	r.windowStart.Store(windowStart.UnixNano())
	bar := progress.Timed(r.notes, cfg.Duration, "window")
	var senders sync.WaitGroup
	if !cfg.Push {
		for i := range cfg.Senders {
			if m := r.members[i]; m != nil {
				senders.Go(func() { r.send(ctx, i, m) })
			}
		}
	}
	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
		rep.Interrupted = true
	}
	r.windowEnd.Store(time.Now().UnixNano())
	bar.Done()
	senders.Wait()
	rep.WindowSeconds = float64(r.windowEnd.Load()-r.windowStart.Load()) / 1e9
	r.awaitDeliveries(ctx)
	return true
}

// Finish closes every connection, counts, and judges the window: the
// connections were made before it, so the broadcasts, the deliveries and
// the CPU are judged.
func (r *run) Finish(_ context.Context, f *scenario.Frame) *Report {
	cfg, rep := r.cfg, r.rep
	rep.ClientCPUSeconds = f.ClientCPU
	r.closing.Store(true)
	r.closeAll()
	r.fill(rep)
	rep.Errors = r.errs.Map()
	rep.Server, rep.ServerError = serverView(cfg, f.Before, f.After)
	v := verdict.Run{Sent: int64(rep.Sent), Received: -1, Slack: int64(cfg.Senders), Lost: int64(rep.Lost),
		ClientCPU: rep.ClientCPUSeconds, Window: time.Duration(rep.WindowSeconds * float64(time.Second)), ServerCPU: -1}
	if cfg.Push {
		v.Sent = -1
	}
	if rep.Server != nil && rep.Server.CPUSeconds != nil {
		v.ServerCPU = *rep.Server.CPUSeconds
	}
	rep.Verdicts = f.Judge(v)
	rep.Shard = f.ShardPart()
	if rep.ServerError != "" {
		fmt.Fprintf(r.notes, "loadgen: %s\n", rep.ServerError)
	}
	return rep
}

// awaitJoins waits for every connection's echo, for up to cfg.Timeout in
// all; one that has not answered by then is closed, counted, and left out.
func (r *run) awaitJoins(ctx context.Context) {
	deadline := time.NewTimer(r.cfg.Timeout)
	defer deadline.Stop()
	late := false
	for i, m := range r.members {
		if m == nil {
			continue
		}
		if !late {
			select {
			case <-m.joined:
				continue
			case <-deadline.C:
				late = true
			case <-ctx.Done():
				late = true
			}
		}
		select {
		case <-m.joined:
		default:
			r.errs.Add(kindJoin, 1, fmt.Errorf("no answer to an echo within %s of connecting", r.cfg.Timeout))
			m.drop()
			r.members[i] = nil
		}
	}
}

// send writes broadcasts at rate/senders per second, on a schedule offset
// per sender so that the senders do not all write at once.
func (r *run) send(ctx context.Context, i int, m *member) {
	interval := time.Duration(float64(time.Second) * float64(r.cfg.Senders) / float64(r.cfg.Rate))
	start := time.Unix(0, r.windowStart.Load()).Add(interval * time.Duration(i) / time.Duration(r.cfg.Senders))
	pad := strings.Repeat("x", r.cfg.Payload)
	buf := make([]byte, 0, 128+len(pad))
	for n := uint64(1); ; n++ {
		at := start.Add(interval * time.Duration(n-1))
		if at.UnixNano() >= r.windowEnd.Load() && r.windowEnd.Load() != 0 {
			return
		}
		if d := time.Until(at); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return
			}
		}
		if end := r.windowEnd.Load(); end != 0 && time.Now().UnixNano() >= end {
			return
		}
		payload, _ := json.Marshal(sent{S: r.cfg.SenderBase + i, N: n, T: time.Now().UnixNano(), Pad: pad})
		buf = append(append(append(buf[:0], `{"type":"broadcast","payload":`...), payload...), '}')
		if err := m.c.WriteMessage(websocket.TextMessage, buf); err != nil {
			r.errs.Add(kindWrite, 1, err)
			return
		}
		r.sentCount[i].Store(n)
	}
}

// read receives everything for a sender until its connection ends.
func (r *run) read(m *member) {
	defer close(m.done)
	buf := make([]byte, 0, 4096)
	for {
		_, rd, err := m.c.NextReader()
		if err == nil {
			buf, err = readAll(rd, buf[:0])
		}
		if err != nil {
			if !r.closing.Load() {
				r.dropped(err)
			}
			return
		}
		r.handle(m, buf, time.Now().UnixNano())
	}
}

// dropped counts a connection that ended before the run closed it.
func (r *run) dropped(err error) {
	r.errs.Add(kindDropped, 1, err)
	if tl := r.timeline.Load(); tl != nil {
		tl.Error(time.Now())
	}
}

// handle takes one message that m received at now (unix nanoseconds).
func (r *run) handle(m *member, buf []byte, now int64) {
	// The two messages that come by the hundred thousand, first without
	// encoding/json.
	if seq, at, ok := protocol.ParsePush(buf); ok {
		r.pushed(m, seq, at, now)
		return
	}
	if p, ok := parseBroadcast(buf); ok && r.ours(p) {
		r.lat.record(m.shard, p.T, now)
		m.track(p.S-r.cfg.SenderBase, p.N)
		return
	}
	var msg protocol.BroadcastMessage
	if err := json.Unmarshal(buf, &msg); err != nil {
		r.errs.Add(kindUnknown, 1, fmt.Errorf("not JSON: %.80q", buf))
		return
	}
	switch msg.Type {
	case protocol.TypePush:
		r.pushed(m, msg.Seq, msg.SentAt, now)
	case protocol.TypeBroadcast:
		var p sent
		if err := json.Unmarshal(msg.Payload, &p); err != nil || !r.ours(p) {
			if err == nil && r.cfg.Shard.Set() {
				r.others.Add(1)
				return
			}
			r.errs.Add(kindUnknown, 1, fmt.Errorf("a broadcast loadgen did not send: %.80q", buf))
			return
		}
		r.lat.record(m.shard, p.T, now)
		m.track(p.S-r.cfg.SenderBase, p.N)
	case protocol.TypeBroadcastResult:
		var p sent
		if json.Unmarshal(msg.Payload, &p) == nil {
			r.rtt.record(m.shard, p.T, now)
		}
		r.results.Add(1)
		// Sharded, the other shards' members listen too.
		if !r.cfg.Shard.Set() && int64(msg.ListenerCount) != r.listeners.Load() {
			r.mismatches.Add(1)
		}
	case protocol.TypeEcho:
		m.once.Do(func() { close(m.joined) })
	case protocol.TypeError:
		r.errs.Add(kindServerErr, 1, errors.New(msg.Error))
	default:
		r.errs.Add(kindUnknown, 1, fmt.Errorf("type %q", msg.Type))
	}
}

// pushed takes a timed push: measured in push mode, counted apart from
// the deliveries in broadcast mode.
func (r *run) pushed(m *member, seq uint64, sentAt, now int64) {
	if r.cfg.Push {
		r.push(m, seq, sentAt, now)
		return
	}
	if r.windowStart.Load() != 0 && !r.closing.Load() {
		r.otherPushes.Add(1)
	}
}

// push records a timed push sent within the window.
func (r *run) push(m *member, seq uint64, sentAt, now int64) {
	start, end := r.windowStart.Load(), r.windowEnd.Load()
	if start == 0 || sentAt < start {
		return
	}
	if end != 0 && sentAt >= end {
		m.mu.Lock()
		m.pushPast = true
		m.mu.Unlock()
		return
	}
	books := &r.pushBooks[m.shard]
	books.RLock()
	defer books.RUnlock()
	if r.pushClosed {
		return
	}
	r.lat.record(m.shard, sentAt, now)
	seen(&r.pushLo, seq, func(old, v uint64) bool { return old == 0 || v < old })
	seen(&r.pushHi, seq, func(old, v uint64) bool { return v > old })
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq <= m.pushLast {
		m.dups++
		return
	}
	m.pushLast = seq
	m.pushGot++
}

// seen stores v in a if better(a, v), atomically.
func seen(a *atomic.Uint64, v uint64, better func(old, v uint64) bool) {
	for {
		old := a.Load()
		if !better(old, v) || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// track counts broadcast number n from sender s. A target keeps each
// sender's broadcasts in order, so a number at or below the last one is a
// duplicate (or out of order), and a jump leaves a loss behind.
func (m *member) track(s int, n uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n <= m.last[s] {
		m.dups++
		return
	}
	m.last[s] = n
	m.got[s]++
}

// awaitDeliveries waits, for up to cfg.Timeout, until every member has
// everything sent in the window.
func (r *run) awaitDeliveries(ctx context.Context) {
	defer r.closeBooks(func() bool { return true })
	deadline := time.Now().Add(r.cfg.Timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if r.closeBooks(r.delivered) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// delivered reports whether every member has what the window sent it.
// Broadcasts: as many as the senders sent. Pushes: the client learns of
// them only as they come, and the window's last ones (all of them, on a
// client that reads late) may still be on their way, so each member whose
// connection is open must have had a push sent after the window: a
// target pushes to a client in order.
func (r *run) delivered() bool {
	if !r.cfg.Push {
		expected, received, _ := r.deliveries()
		return received >= expected
	}
	for _, m := range r.members {
		if m == nil {
			continue
		}
		m.mu.Lock()
		past := m.pushPast
		m.mu.Unlock()
		if !past && !m.ended() {
			return false
		}
	}
	return true
}

// ended reports whether m's connection has ended.
func (m *member) ended() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// closeBooks closes the push accounting if ready says so, with every push
// held off meanwhile, and reports whether it did. (Broadcasts need no
// books: what is expected of them is what the senders sent, known once
// they have stopped.)
func (r *run) closeBooks(ready func() bool) bool {
	for i := range r.pushBooks {
		r.pushBooks[i].Lock()
	}
	defer func() {
		for i := range r.pushBooks {
			r.pushBooks[i].Unlock()
		}
	}()
	if !r.pushClosed && ready() {
		r.pushClosed = true
	}
	return r.pushClosed
}

// deliveries counts what every member should have received in the window,
// what it did (distinct), and the duplicates.
func (r *run) deliveries() (expected, received, dups uint64) {
	var perMember uint64
	if r.cfg.Push {
		if lo, hi := r.pushLo.Load(), r.pushHi.Load(); lo != 0 {
			perMember = hi - lo + 1
		}
	} else {
		for i := range r.sentCount {
			perMember += r.sentCount[i].Load()
		}
	}
	for _, m := range r.members {
		if m == nil {
			continue
		}
		expected += perMember
		m.mu.Lock()
		if r.cfg.Push {
			received += m.pushGot
		} else {
			for _, g := range m.got {
				received += g
			}
		}
		dups += m.dups
		m.mu.Unlock()
	}
	return expected, received, dups
}

// fill puts the run's figures into the report.
func (r *run) fill(rep *Report) {
	expected, received, dups := r.deliveries()
	rep.Expected, rep.Received, rep.Duplicates = expected, received, dups
	rep.Lost = expected - min(received, expected)
	if r.cfg.Push {
		if lo := r.pushLo.Load(); lo != 0 {
			rep.Pushes = r.pushHi.Load() - lo + 1
		}
	}
	for i := range r.sentCount {
		rep.Sent += r.sentCount[i].Load()
	}
	rep.Results = r.results.Load()
	rep.OtherShards = r.others.Load()
	if !r.cfg.Push {
		rep.PushesReceived = r.otherPushes.Load()
	}
	rep.ListenerMismatches = r.mismatches.Load()
	rep.ListenerCount = r.listeners.Load()
	lat := r.lat.merged()
	rep.Latency = latencyOf(lat)
	rep.Distribution = timeline.Distribution(lat)
	rtt := r.rtt.merged()
	rep.ResultRTT = latencyOf(rtt)
	if r.cfg.Shard.Set() {
		rep.LatencyHistogram, rep.ResultRTTHistogram = protocol.Buckets(lat), protocol.Buckets(rtt)
	}
	if tl := r.timeline.Load(); tl != nil {
		// The window's timer ends it a little after Duration: that is
		// not a second of its own.
		rep.Samples = tl.Samples(min(time.Duration(rep.WindowSeconds*float64(time.Second)), r.cfg.Duration))
	}
}

// closeAll closes every connection with 1000, closeParallel at a time, and
// waits (bounded) for the readers.
func (r *run) closeAll() {
	target.EachAtMost(r.members, closeParallel, func(_ int, m *member) {
		if m == nil {
			return
		}
		m.goodbye()
		select {
		case <-m.done:
		case <-time.After(2 * time.Second):
		}
		m.drop()
		<-m.done
	})
}

// goodbye sends a close frame with 1000; the target answers and closes.
func (m *member) goodbye() {
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	if m.g != nil {
		_ = m.g.AsyncWrite(wsframe.ClientFrame(ws.OpClose, msg), nil)
		return
	}
	_ = m.c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
}

// drop closes m's connection at once.
func (m *member) drop() {
	if m.g != nil {
		_ = m.g.Close()
		return
	}
	_ = m.c.Close()
}

// readAll appends all of rd to buf.
func readAll(rd io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// shardedHist is a latency histogram that many readers record into; with a
// timeline, each shard samples the seconds too, under the same lock.
type shardedHist struct {
	mu       [shards]sync.Mutex
	h        [shards]*hdrhistogram.Histogram
	timeline *atomic.Pointer[timeline.Timeline] // nil: no seconds
	seconds  [shards]*timeline.Local            // made once the timeline is set
}

func newShardedHist(tl *atomic.Pointer[timeline.Timeline]) *shardedHist {
	s := &shardedHist{timeline: tl}
	for i := range s.h {
		s.h[i] = protocol.NewHistogram()
	}
	return s
}

// record adds to shard i the latency of a message sent and received at
// the given unix nanoseconds.
func (s *shardedHist) record(i int, sent, received int64) {
	us := max((received-sent)/1000, 1) // out of range is dropped
	s.mu[i].Lock()
	defer s.mu[i].Unlock()
	_ = s.h[i].RecordValue(us)
	if s.seconds[i] == nil && s.timeline != nil {
		if tl := s.timeline.Load(); tl != nil {
			s.seconds[i] = tl.Local()
		}
	}
	if s.seconds[i] != nil {
		s.seconds[i].Record(time.Unix(0, sent), us)
	}
}

// merged is every shard's histogram in one; it hands the shards' seconds
// to the timeline.
func (s *shardedHist) merged() *hdrhistogram.Histogram {
	out := protocol.NewHistogram()
	for i := range s.h {
		s.mu[i].Lock()
		out.Merge(s.h[i])
		if s.seconds[i] != nil {
			s.seconds[i].Flush()
		}
		s.mu[i].Unlock()
	}
	return out
}

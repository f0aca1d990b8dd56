package cluster

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/shared/metrics"
)

// Channels and keys of the broadcast bus (see the package doc).
const (
	BusChannel   = "knowngood#broadcast"
	answerPrefix = "knowngood#broadcast#answer#" // + the origin's replica id
	replicasKey  = "knowngood#replicas"          // sorted set: replica id -> expiry, unix ms
	leaseKey     = "knowngood#push#lease"        // the id of the replica that pushes
	seqKey       = "knowngood#push#seq"          // the last push's seq
)

// Bounds of the bus. Every one is a resource a client can make a replica
// hold by broadcasting in a loop.
const (
	// AnswerWait is how long a broadcast's result waits for the other
	// replicas' counts; a replica that has not answered by then is left
	// out of listenerCount (cluster_partial_results_total{reason="timeout"}).
	AnswerWait = time.Second
	// MaxPending bounds the broadcasts waiting for answers; one more is
	// still delivered everywhere, but its result counts this replica's
	// clients only (reason "overflow").
	MaxPending = 10000
	// outQueue bounds what waits to be published; a broadcast that does
	// not fit does not cross (cluster_messages_total{out,failed}).
	outQueue = 4096
	// outBatch is how many queued publishes go to Redis in one round trip.
	outBatch = 128

	heartbeatEvery = time.Second
	heartbeatTTL   = 3 * time.Second
	// retryEvery paces the subscriber while Redis does not answer.
	retryEvery = 100 * time.Millisecond
)

// Bus carries one replica's broadcasts and pushes to the other replicas
// and theirs to this one's clients. deliver hands a frame to every local
// client and returns how many took it.
type Bus struct {
	r       *Redis
	m       *metrics.Metrics
	deliver func(frame []byte) int

	out chan outMsg
	ps  *redis.PubSub

	mu      sync.Mutex
	pending map[uint64]*pending
	nextReq uint64

	live atomic.Int64 // replicas whose heartbeat is current, this one included

	pushMu  sync.Mutex // orders the pushes handed to local clients
	lastSeq uint64     // the highest push seq handed to local clients

	stop context.CancelFunc
	ctx  context.Context
	wg   sync.WaitGroup
}

// outMsg is one PUBLISH waiting in the queue. A broadcast's payload is
// its header and frame; the header's last field, its expiry, is written
// when it is published (stamp).
type outMsg struct {
	channel, payload string
	frame            string    // a broadcast's frame, after its header
	counted          bool      // a broadcast or a push: cluster_messages_total{out}
	req              *pending  // a broadcast whose result waits for answers
	at               time.Time // when it was queued
}

// stamp is what msg publishes when its publish is given up at deadline:
// a broadcast's header ends with that deadline (unix ms), past which a
// replica that gets it drops it. Redis may yet run a PUBLISH that this
// replica gave up on (a stalled Redis keeps the command in its socket
// buffer and runs it when it resumes, seconds later): it is counted
// failed here, and so it must never reach a client there.
func (msg outMsg) stamp(deadline time.Time) string {
	if msg.channel != BusChannel {
		return msg.payload // an answer: late, it finds its request gone
	}
	return msg.payload + " " + strconv.FormatInt(deadline.UnixMilli(), 10) + "\n" + msg.frame
}

// pending is a broadcast whose result waits for the other replicas.
type pending struct {
	id     uint64
	sum    int  // clients the answers counted
	got    int  // answers, this replica's own copy included
	want   int  // PUBLISH's count of subscribers; -1 until it answers
	missed bool // PUBLISH reached fewer replicas than were live
	done   func(remote int)
	timer  *time.Timer
}

// NewBus subscribes this replica and starts its heartbeat. Close stops it.
func NewBus(r *Redis, m *metrics.Metrics, deliver func(frame []byte) int) *Bus {
	ctx, stop := context.WithCancel(context.Background())
	b := &Bus{
		r: r, m: m, deliver: deliver,
		out:     make(chan outMsg, outQueue),
		pending: map[uint64]*pending{},
		ctx:     ctx, stop: stop,
	}
	// go-redis keeps the channels and subscribes again on every new
	// connection, so the subscription outlives a Redis restart; an error
	// here only means Redis is not there yet.
	b.ps = r.Client.Subscribe(ctx, BusChannel, answerPrefix+r.ID)
	b.live.Store(1)
	b.wg.Go(b.receive)
	b.wg.Go(b.publish)
	b.wg.Go(b.heartbeat)
	return b
}

// Close stops the bus: no result waits any more, and the replica leaves
// the live set at once rather than after its heartbeat's TTL.
func (b *Bus) Close() {
	b.stop()
	_ = b.ps.Close()
	b.wg.Wait()
	b.mu.Lock()
	for id, p := range b.pending {
		p.timer.Stop()
		delete(b.pending, id)
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = b.r.Client.ZRem(ctx, replicasKey, b.r.ID).Err()
}

// Live is the number of replicas whose heartbeat is current, this one
// included, as of the last heartbeat.
func (b *Bus) Live() int { return int(b.live.Load()) }

// Broadcast sends frame, already handed to this replica's clients, to
// every other replica's. done gets, once and from another goroutine, the
// number of clients on other replicas that took it: the sum of their
// answers within AnswerWait.
func (b *Bus) Broadcast(frame []byte, done func(remote int)) {
	p := b.register(done)
	var req uint64
	if p != nil {
		req = p.id
	}
	msg := outMsg{channel: BusChannel, payload: header('b', b.r.ID, req), frame: string(frame), counted: true, req: p, at: time.Now()}
	select {
	case b.out <- msg:
	default:
		b.m.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
		if p != nil {
			b.finish(p.id, metrics.PartialUnpublished)
			return
		}
	}
	if p == nil {
		b.m.ClusterPartial(metrics.PartialOverflow)
		done(0)
	}
}

// header is the first line of a message on BusChannel, but its last
// field: kind (b broadcast, p push), origin replica, the request id (0:
// send no answer) or the push's seq, and a broadcast's expiry (unix ms;
// stamp), past which a replica drops it. A push's is written by
// leaseScript, in Redis, where its seq is known; it has no expiry.
func header(kind byte, origin string, n uint64) string {
	return string(kind) + " " + origin + " " + strconv.FormatUint(n, 10)
}

// expired reports whether a message whose header carries expiry (unix ms,
// "" for none) has come too late to deliver. The expiry is its sender's
// clock: replicas' clocks must agree to well under AnswerWait.
func expired(expiry string) bool {
	if expiry == "" {
		return false
	}
	ms, err := strconv.ParseInt(expiry, 10, 64)
	return err == nil && time.Now().UnixMilli() > ms
}

// register puts a broadcast in the table of results waiting, or answers
// nil when the table is full.
func (b *Bus) register(done func(int)) *pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) >= MaxPending {
		return nil
	}
	b.nextReq++
	p := &pending{id: b.nextReq, want: -1, done: done}
	p.timer = time.AfterFunc(AnswerWait, func() { b.finish(p.id, metrics.PartialTimeout) })
	b.pending[p.id] = p
	return p
}

// published records PUBLISH's count of subscribers that got request id
// (n < 0: it failed).
func (b *Bus) published(id uint64, n int) {
	if n < 0 {
		b.finish(id, metrics.PartialUnpublished)
		return
	}
	b.mu.Lock()
	p := b.pending[id]
	if p == nil {
		b.mu.Unlock()
		return
	}
	p.want = n
	p.missed = n < b.Live()
	complete := p.got >= p.want
	b.mu.Unlock()
	if complete {
		b.finish(id, "")
	}
}

// answered adds a replica's count to request id.
func (b *Bus) answered(id uint64, n int) {
	b.mu.Lock()
	p := b.pending[id]
	if p == nil {
		b.mu.Unlock()
		return // came after the wait, or after a failed publish
	}
	p.sum += n
	p.got++
	complete := p.want >= 0 && p.got >= p.want
	b.mu.Unlock()
	if complete {
		b.finish(id, "")
	}
}

// finish takes request id out of the table and gives its sum to done;
// reason, if not "", says why the sum is partial. Only the first call for
// an id does anything.
func (b *Bus) finish(id uint64, reason string) {
	b.mu.Lock()
	p := b.pending[id]
	delete(b.pending, id)
	b.mu.Unlock()
	if p == nil {
		return
	}
	p.timer.Stop()
	if reason == "" && p.missed {
		reason = metrics.PartialMissed
	}
	if reason != "" {
		b.m.ClusterPartial(reason)
	}
	p.done(p.sum)
}

// publish sends the queue to Redis, up to outBatch messages per round
// trip, and counts each message's fate.
func (b *Bus) publish() {
	batch := make([]outMsg, 0, outBatch)
	cmds := make([]*redis.IntCmd, 0, outBatch)
	for {
		batch, cmds = batch[:0], cmds[:0]
		select {
		case <-b.ctx.Done():
			return
		case msg := <-b.out:
			batch = append(batch, msg)
		}
	fill:
		for len(batch) < outBatch {
			select {
			case msg := <-b.out:
				batch = append(batch, msg)
			default:
				break fill
			}
		}
		// A message that waited AnswerWait (Redis gone, dials failing) is
		// dropped, not sent late: its result has gone out without it, and
		// a broadcast or a push arriving seconds after it was made would
		// pass for a delivery. It counts as not crossed. The round trip
		// is given AnswerWait, and each message sent carries its end
		// (stamp): one that Redis has not answered by then counts as not
		// crossed, and a replica that gets it after then drops it. So a
		// broadcast is delivered within 2 x AnswerWait of being made, or
		// never. (The end is counted from now, not from the oldest
		// message's making: one that waited most of AnswerWait would give
		// its whole batch an end a few milliseconds away, and a replica a
		// few milliseconds slower than the answer would drop what this
		// one counted as crossed.)
		now := time.Now()
		deadline := now.Add(AnswerWait)
		ctx, cancel := context.WithDeadline(b.ctx, deadline)
		pipe := b.r.Client.Pipeline()
		for _, msg := range batch {
			var cmd *redis.IntCmd
			if now.Sub(msg.at) < AnswerWait {
				cmd = pipe.Publish(ctx, msg.channel, msg.stamp(deadline))
			} else {
				cmd = redis.NewIntCmd(ctx)
				cmd.SetErr(context.DeadlineExceeded)
			}
			cmds = append(cmds, cmd)
		}
		var err error
		if pipe.Len() > 0 {
			_, err = pipe.Exec(ctx)
		}
		cancel()
		if err != nil && b.ctx.Err() == nil {
			b.r.Fail(metrics.RedisPublish, err)
		}
		for i, msg := range batch {
			n, err := cmds[i].Result()
			if msg.counted {
				if err != nil {
					b.m.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
				} else {
					b.m.Cluster(metrics.ClusterOut, metrics.ClusterOK, 1)
				}
			}
			if msg.req != nil {
				if err != nil {
					n = -1
				}
				b.published(msg.req.id, int(n))
			}
		}
	}
}

// receive reads the subscription until Close. go-redis reconnects and
// subscribes again after an error; receive only paces the retries and
// counts them.
func (b *Bus) receive() {
	for {
		msg, err := b.ps.ReceiveMessage(b.ctx)
		if err != nil {
			if b.ctx.Err() != nil {
				return
			}
			b.r.Fail(metrics.RedisReceive, err)
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(retryEvery):
			}
			continue
		}
		if msg.Channel == BusChannel {
			b.onBus(msg.Payload)
		} else {
			b.onAnswer(msg.Payload)
		}
	}
}

// onBus handles a broadcast or a push. A push goes to the local clients,
// this replica's own included: the push script publishes it, and the bus
// is what keeps pushes in seq order. Another replica's broadcast goes to
// the local clients and is answered with their number; this replica's
// own, back from Redis, counts as its own answer of 0 clients, since
// PUBLISH counted this replica among the subscribers.
func (b *Bus) onBus(payload string) {
	head, frame, ok := strings.Cut(payload, "\n")
	kind, rest, ok1 := strings.Cut(head, " ")
	origin, rest, ok2 := strings.Cut(rest, " ")
	num, expiry, _ := strings.Cut(rest, " ")
	n, err := strconv.ParseUint(num, 10, 64)
	if !ok || !ok1 || !ok2 || err != nil || (kind != "b" && kind != "p") {
		b.m.Cluster(metrics.ClusterIn, metrics.ClusterFailed, 1)
		return
	}
	if expired(expiry) {
		// Its sender gave it up (a broadcast: its result went out
		// without this replica) or Redis held it past the bound.
		if origin != b.r.ID {
			b.m.Cluster(metrics.ClusterIn, metrics.ClusterExpired, 1)
		}
		return
	}
	if kind == "p" {
		if origin != b.r.ID {
			b.m.Cluster(metrics.ClusterIn, metrics.ClusterOK, 1)
		}
		b.deliverPush(n, []byte(frame))
		return
	}
	if origin == b.r.ID {
		if n != 0 {
			b.answered(n, 0)
		}
		return
	}
	b.m.Cluster(metrics.ClusterIn, metrics.ClusterOK, 1)
	took := b.deliver([]byte(frame))
	if n == 0 {
		return
	}
	answer := outMsg{channel: answerPrefix + origin, payload: num + " " + strconv.Itoa(took), at: time.Now()}
	select {
	case b.out <- answer:
	default:
		// The origin's wait runs out and counts it partial.
		b.m.RedisError(metrics.RedisPublish)
	}
}

// onAnswer reads "REQ COUNT" on this replica's answer channel.
func (b *Bus) onAnswer(payload string) {
	req, count, ok := strings.Cut(payload, " ")
	id, err1 := strconv.ParseUint(req, 10, 64)
	n, err2 := strconv.Atoi(count)
	if !ok || err1 != nil || err2 != nil || n < 0 {
		b.m.Cluster(metrics.ClusterIn, metrics.ClusterFailed, 1)
		return
	}
	b.answered(id, n)
}

// heartbeat keeps this replica in the live set: its entry expires
// heartbeatTTL after the last beat, and each beat drops the expired ones.
// The expiry is this host's clock: replicas' clocks must agree to well
// under heartbeatTTL - heartbeatEvery.
func (b *Bus) heartbeat() {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(b.ctx, time.Second)
		now := time.Now()
		pipe := b.r.Client.Pipeline()
		pipe.ZAdd(ctx, replicasKey, redis.Z{Score: float64(now.Add(heartbeatTTL).UnixMilli()), Member: b.r.ID})
		pipe.ZRemRangeByScore(ctx, replicasKey, "-inf", strconv.FormatInt(now.UnixMilli(), 10))
		card := pipe.ZCard(ctx, replicasKey)
		_, err := pipe.Exec(ctx)
		cancel()
		if b.ctx.Err() != nil {
			return
		}
		if err != nil {
			b.r.Fail(metrics.RedisHeartbeat, err)
		} else {
			b.live.Store(card.Val())
		}
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
	}
}

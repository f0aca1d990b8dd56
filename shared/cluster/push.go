package cluster

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/shared/metrics"
)

// leaseScript takes or renews the push lease and numbers the push, in one
// round trip and atomically, so that two replicas never both believe they
// hold it at the same moment in Redis's eyes.
//
// KEYS: lease, seq. ARGV: replica id, lease in ms, the highest seq this
// replica has handed out. The counter is first raised to that seq, so
// that after a Redis restart (which loses it) or an outage during which
// the holder went on alone, seq still only goes up. Returns the new seq,
// or 0 when another replica holds the lease.
var leaseScript = redis.NewScript(`
local seen = tonumber(ARGV[3])
if (tonumber(redis.call('GET', KEYS[2])) or 0) < seen then
	redis.call('SET', KEYS[2], seen)
end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return redis.call('INCR', KEYS[2])
`)

// Push runs the cluster's timed push until ctx ends: one push per
// interval for the whole cluster. Every interval each replica tries the
// lease; the holder numbers the push from the cluster's counter, hands
// frame(seq) to its own clients and publishes it for the others'.
//
// While Redis does not answer, the replica that held the lease goes on
// alone: it numbers on from its last seq and pushes to its own clients
// only (each counted as cluster_messages_total{out,failed}); the others
// push nothing. So every client still sees one numbered stream, and a
// client of another replica sees, once pushes reach it again, a gap of
// exactly the pushes it missed.
func (b *Bus) Push(ctx context.Context, interval time.Duration, frame func(seq uint64) []byte) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	held := false
	lease := strconv.FormatInt((2 * interval).Milliseconds(), 10)
	// The script's reply may come late on a loaded host; giving up on it
	// early would lose a seq it has already taken (a gap that no client
	// could tell from a lost push), so the wait is generous. A Redis that
	// does not answer holds the push no longer than that, and pushes
	// nothing meanwhile.
	wait := max(2*interval, time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		b.pushMu.Lock()
		seen := b.lastSeq
		b.pushMu.Unlock()
		lctx, cancel := context.WithTimeout(ctx, wait)
		seq, err := leaseScript.Run(lctx, b.r.Client, []string{leaseKey, seqKey}, b.r.ID, lease, seen).Uint64()
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			b.r.Fail(metrics.RedisLease, err)
			if held {
				seq := seen + 1
				b.deliverPush(seq, frame(seq))
				b.m.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
			}
			continue
		case seq == 0:
			held = false
			continue
		}
		held = true
		f := frame(seq)
		b.deliverPush(seq, f)
		select {
		case b.out <- outMsg{channel: BusChannel, payload: header('p', b.r.ID, seq) + string(f), counted: true, at: time.Now()}:
		default:
			b.m.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
		}
	}
}

// deliverPush hands a push to the local clients unless one with the same
// or a higher seq went before: a client's seq only goes up, whichever
// replica numbered it (a holder and its successor can overlap for a tick
// after a lease changes hands).
func (b *Bus) deliverPush(seq uint64, frame []byte) {
	b.pushMu.Lock()
	defer b.pushMu.Unlock()
	if seq <= b.lastSeq {
		return
	}
	b.lastSeq = seq
	b.deliver(frame)
}

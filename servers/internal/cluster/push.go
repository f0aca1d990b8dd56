package cluster

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/shared/metrics"
)

// leaseScript takes or renews the push lease, numbers the push and
// publishes it, in one round trip and atomically: two replicas never both
// believe they hold the lease at the same moment in Redis's eyes, and
// since Redis hands its subscribers messages in the order it published
// them, every replica gets the pushes in seq order, whichever replica
// numbered each. (Were the publish a step of its own, a holder held up
// between the two steps past its lease could publish seq N after its
// successor had published N+1, and every client would see N missing.)
//
// KEYS: lease, seq. ARGV: replica id, lease in ms, the highest seq this
// replica has handed out, the bus channel, the push's head and tail (its
// seq goes between them); it publishes header('p', id, seq) and the
// push, written out in Lua. The counter is first raised to that seq, so
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
local seq = string.format('%d', redis.call('INCR', KEYS[2]))
redis.call('PUBLISH', ARGV[4], 'p ' .. ARGV[1] .. ' ' .. seq .. '\n' .. ARGV[5] .. seq .. ARGV[6])
return seq
`)

// Push runs the cluster's timed push until ctx ends: one push per
// interval for the whole cluster. Every interval each replica tries the
// lease; the holder's script numbers the push from the cluster's counter
// and publishes it, and every replica, the holder included, hands it to
// its clients when it comes back on the bus. frame gives the push in two
// parts, made now; its seq goes between them.
//
// While Redis does not answer, the replica that held the lease goes on
// alone: it numbers on from its last seq and pushes to its own clients
// only (each counted as cluster_messages_total{out,failed}); the others
// push nothing. So every client still sees one numbered stream, and a
// client of another replica sees, once pushes reach it again, a gap of
// exactly the pushes it missed.
func (b *Bus) Push(ctx context.Context, interval time.Duration, frame func() (head, tail string)) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	held := false
	lease := strconv.FormatInt((2 * interval).Milliseconds(), 10)
	// The script's reply may come late on a loaded host; giving up on it
	// early would make a holder push alone a seq the script may already
	// have published, so the wait is generous. A Redis that does not
	// answer holds the push no longer than that, and pushes nothing
	// meanwhile.
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
		head, tail := frame()
		lctx, cancel := context.WithTimeout(ctx, wait)
		seq, err := leaseScript.Run(lctx, b.r.Client, []string{leaseKey, seqKey}, b.r.ID, lease, seen, BusChannel, head, tail).Uint64()
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			b.r.Fail(metrics.RedisLease, err)
			if held {
				seq := seen + 1
				b.deliverPush(seq, []byte(head+strconv.FormatUint(seq, 10)+tail))
				b.m.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
			}
		case seq == 0:
			held = false
		default:
			held = true
			b.m.Cluster(metrics.ClusterOut, metrics.ClusterOK, 1)
		}
	}
}

// deliverPush hands a push to the local clients unless one with the same
// or a higher seq went before: a client's seq only goes up, whichever
// replica numbered it (the bus brings every push in order; a holder that
// lost Redis numbers on alone, and its own pushes may then meet the ones
// the script published before it knew).
func (b *Bus) deliverPush(seq uint64, frame []byte) {
	b.pushMu.Lock()
	defer b.pushMu.Unlock()
	if seq <= b.lastSeq {
		return
	}
	b.lastSeq = seq
	b.deliver(frame)
}

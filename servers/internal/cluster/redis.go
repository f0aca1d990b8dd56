// Package cluster joins replicas of a target into one cluster through
// Redis (-redis): broadcasts and pushes cross replicas on Redis pub/sub,
// and a Socket.IO adapter speaks the wire format of Node's
// @socket.io/redis-adapter, so that a knowngood replica and a Node one can
// share a Redis.
//
// Redis is a helper, not a dependency of local service: when it goes away
// a replica keeps serving its own clients, counts every operation that
// failed (knowngood_redis_errors_total{op}) and every message that could
// not cross (knowngood_cluster_messages_total{direction,result}), logs at
// most once a second, and reconnects by itself.
//
// # The broadcast targets across replicas (bus.go, push.go)
//
// Every replica subscribes to two channels: knowngood#broadcast, which
// all share, and knowngood#broadcast#answer#ID, its own (ID: the
// replica's random id, new at each start). A message on
// knowngood#broadcast is one header line and the WebSocket frame's text:
//
//	b ORIGIN REQ\n{"type":"broadcast","payload":...}
//	p ORIGIN SEQ\n{"type":"push","seq":SEQ,"sentAt":...,"payload":"..."}
//
// A broadcast goes to the origin's own clients at once, the sender
// included, then is published. Every other replica hands it to its
// clients and publishes "REQ COUNT" on the origin's answer channel: how
// many of its clients took it. The origin's own copy, back from Redis,
// counts as its own answer of 0. listenerCount is the origin's count plus
// the answers, and it is exact: PUBLISH returns how many subscribers got
// the message, each of them hands it to its clients and answers once, and
// the origin waits for exactly that many answers (ordering does not
// matter: answers that come before PUBLISH's reply are kept). A replica
// subscribing meanwhile is either counted by PUBLISH and answers, or is
// not and does not; one that dies after PUBLISH counted it makes the wait
// run out.
//
// The wait is bounded: AnswerWait (1 s) after the broadcast its result
// goes to the sender with the answers that came, and
// knowngood_cluster_partial_results_total{reason} counts it: timeout (a
// replica got it and did not answer: it died, or its answer could not be
// published), unpublished (Redis refused it or the publish queue was full:
// the count is this replica's clients only), missed (PUBLISH reached fewer
// subscribers than replicas were live: one was reconnecting and never got
// it), overflow (MaxPending, 10,000, broadcasts were already waiting: it
// was still delivered everywhere, but its count is this replica's only).
// So while a replica is down, listenerCount counts the replicas that
// answered, and the partial counter says how often that was not all.
// A publish that waited AnswerWait in the queue (Redis gone) is dropped,
// not sent late, and counted as cluster_messages_total{out,failed}. One
// sent carries the deadline its publish is given up at: a stalled Redis
// that runs it after that (it waited in Redis's socket buffer) publishes
// a message every replica drops, counting cluster_messages_total{in,
// expired}.
//
// Live replicas are a sorted set, knowngood#replicas, of id -> expiry
// (unix ms, this host's clock): each replica adds itself every second with
// a 3 s expiry and drops the expired; Close removes it at once.
//
// # The timed push
//
// One push per interval for the whole cluster, numbered by the cluster.
// Each interval every replica runs one Lua script: it takes the lease
// (knowngood#push#lease = its id, PX 2 x interval) if nobody holds it,
// renews it if it is the holder, and for the holder numbers the push
// (INCR knowngood#push#seq) and publishes it, in the same atomic step.
// Every replica, the holder included, hands the pushes to its clients as
// they come back on the bus, which is in the order Redis numbered them:
// a holder held up past its lease cannot publish an older seq after its
// successor's newer one. A replica skips any seq not above the last it
// handed out, so that a client's seq only goes up. A killed holder's
// lease runs out within 2 intervals and the next replica to tick takes
// it: pushes pause about 3 intervals, and seq goes on from the counter.
//
// The script also raises the counter to the highest seq the caller has
// handed out, so that seq still only goes up after Redis restarts empty.
// While a replica cannot reach Redis, if it held the lease it goes on
// numbering by itself and pushes to its own clients only (counted as
// out/failed); the others push nothing. Each client thus still sees one
// stream whose gaps are exactly the pushes it missed, which is what a load
// client's loss and latency accounting needs. (With Redis lost by only the
// holder, the others elect a new one meanwhile: its clients may then see
// a step of seq, never a step back.)
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/shared/metrics"
)

// probeEvery is how often a replica checks that Redis answers when nothing
// else has told it: /health's "redis" follows within about that long.
const probeEvery = 500 * time.Millisecond

// Redis is one replica's connection to the cluster's Redis: the client,
// the replica's id, whether Redis answers, and the accounting of failures.
type Redis struct {
	Client *redis.Client
	// ID names this replica in the cluster: random, new at each start, so
	// that a restarted replica is never taken for its former self.
	ID string

	m       *metrics.Metrics
	log     *slog.Logger
	up      atomic.Bool
	lastLog atomic.Int64 // unix nanoseconds of the last failure logged
	stop    context.CancelFunc
	done    chan struct{}
}

// Dial makes the client for url (redis://HOST:PORT/DB) and starts the
// probe. Redis need not answer yet: a replica starts, serves alone, and
// joins the cluster when Redis comes (compose starts them in any order).
func Dial(url string, m *metrics.Metrics, log *slog.Logger) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	// Short bounds: a Redis that hangs must not hold a broadcast, a
	// connect or a shutdown for long. go-redis retries a failed command
	// on a new connection by itself; one retry is enough to ride out a
	// dropped connection without doubling a hang.
	opts.DialTimeout = 2 * time.Second
	opts.ReadTimeout = time.Second
	opts.WriteTimeout = time.Second
	opts.MaxRetries = 1
	ctx, stop := context.WithCancel(context.Background())
	r := &Redis{Client: redis.NewClient(opts), ID: newID(), m: m, log: log, stop: stop, done: make(chan struct{})}
	go r.probe(ctx)
	return r, nil
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// probe pings Redis every probeEvery, so that the state is current when no
// broadcast tells it, and logs the way back up.
func (r *Redis) probe(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := r.Client.Ping(pctx).Err()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.Fail(metrics.RedisHeartbeat, err)
		} else {
			r.OK()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// OK records that Redis answered.
func (r *Redis) OK() {
	if !r.up.Swap(true) {
		r.log.Info("redis: up", "addr", r.Client.Options().Addr, "replica", r.ID)
	}
}

// Fail records a failed operation: counted always, logged at most once a
// second, and the state goes to down.
func (r *Redis) Fail(op string, err error) {
	r.m.RedisError(op)
	wasUp := r.up.Swap(false)
	now := time.Now().UnixNano()
	last := r.lastLog.Load()
	if (wasUp || now-last >= int64(time.Second)) && r.lastLog.CompareAndSwap(last, now) {
		r.log.Warn("redis: operation failed; serving this replica's clients alone until it answers",
			"op", op, "err", err, "addr", r.Client.Options().Addr)
	}
}

// Up reports whether Redis answered last.
func (r *Redis) Up() bool { return r.up.Load() }

// RedisState is "up" or "down", for /health.
func (r *Redis) RedisState() string {
	if r.Up() {
		return "up"
	}
	return "down"
}

// Close stops the probe and closes the client.
func (r *Redis) Close() error {
	r.stop()
	<-r.done
	return r.Client.Close()
}

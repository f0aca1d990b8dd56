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
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"knowngood/shared/metrics"
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

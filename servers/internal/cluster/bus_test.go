package cluster_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/metrics"
)

// startBus starts a Redis of the test's own and a bus on it, whose
// replica counts one listener a broadcast; the bus closes when the test
// ends.
func startBus(t *testing.T) (*clustertest.Redis, *cluster.Bus, *metrics.Metrics) {
	t.Helper()
	srv := clustertest.StartRedis(t)
	r, m := dial(t, srv)
	bus := cluster.NewBus(r, m, func([]byte) int { return 1 })
	t.Cleanup(bus.Close)
	return srv, bus, m
}

// TestBusBounded: a client that broadcasts in a loop while another
// replica never answers cannot make a replica hold more than MaxPending
// results, nor any for longer than AnswerWait; every result still goes
// out once, and every one is counted as partial, with its reason.
func TestBusBounded(t *testing.T) {
	t.Parallel() // a Redis of its own
	srv, bus, m := startBus(t)

	// A "replica" that takes every broadcast and never answers.
	silent := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer silent.Close()
	ps := silent.Subscribe(context.Background(), cluster.BusChannel)
	defer ps.Close()
	lifecycletest.WaitUpTo(t, 10*time.Second, "2 subscribers", func() bool {
		n, err := silent.PubSubNumSub(context.Background(), cluster.BusChannel).Result()
		return err == nil && n[cluster.BusChannel] == 2
	})

	const total = cluster.MaxPending + 500
	var done, wrong atomic.Int64
	start := time.Now()
	for range total {
		bus.Broadcast([]byte(`{"type":"broadcast","payload":1}`), func(remote int) {
			if remote != 0 {
				wrong.Add(1)
			}
			done.Add(1)
		})
	}
	for done.Load() < total {
		if time.Since(start) > 10*cluster.AnswerWait {
			t.Fatalf("%d of %d results after %v", done.Load(), total, time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	partial := m.Snapshot().ClusterPartial
	sum := uint64(0)
	for _, n := range partial {
		sum += n
	}
	if sum != total || partial[metrics.PartialTimeout] > cluster.MaxPending || partial[metrics.PartialTimeout] == 0 || wrong.Load() != 0 {
		t.Errorf("partial results %v (sum %d), want %d, at most %d timeouts; %d results counted a client", partial, sum, total, cluster.MaxPending, wrong.Load())
	}
	t.Logf("%d broadcasts, results in %v: %v", total, time.Since(start), partial)
}

// TestBusMissed: a replica whose heartbeat is current but which is not
// subscribed (reconnecting) does not get a broadcast: PUBLISH reaches
// fewer replicas than are live, and the result is counted as missed.
func TestBusMissed(t *testing.T) {
	t.Parallel() // a Redis of its own
	srv, bus, m := startBus(t)

	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	ghost := float64(time.Now().Add(time.Hour).UnixMilli())
	if err := rc.ZAdd(context.Background(), "knowngood#replicas", redis.Z{Score: ghost, Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	lifecycletest.WaitUpTo(t, 10*time.Second, "1 subscriber and 2 live replicas", func() bool {
		n, err := rc.PubSubNumSub(context.Background(), cluster.BusChannel).Result()
		return err == nil && n[cluster.BusChannel] == 1 && bus.Live() == 2
	})
	got := make(chan int, 1)
	bus.Broadcast([]byte(`{"type":"broadcast","payload":1}`), func(remote int) { got <- remote })
	select {
	case n := <-got:
		if n != 0 {
			t.Errorf("remote count %d, want 0", n)
		}
	case <-time.After(5 * cluster.AnswerWait):
		t.Fatal("no result")
	}
	if p := m.Snapshot().ClusterPartial; p[metrics.PartialMissed] != 1 || len(p) != 1 {
		t.Errorf("partial results %v, want missed: 1", p)
	}
}

// TestBusStallNeverLate: broadcasts made while Redis is stalled (paused,
// not gone: what a replica writes waits in Redis's socket buffer and is
// run when it resumes) are counted failed by their sender once the wait
// ends, and when Redis runs them late, the other replica drops them as
// expired: no client gets a broadcast that its sender counted as not
// crossed, seconds after it was made.
func TestBusStallNeverLate(t *testing.T) {
	t.Parallel() // a Redis of its own
	srv, sender, sent := startBus(t)
	r, got := dial(t, srv)
	var delivered atomic.Int64
	receiver := cluster.NewBus(r, got, func([]byte) int { delivered.Add(1); return 1 })
	t.Cleanup(receiver.Close)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	lifecycletest.WaitUpTo(t, 10*time.Second, "2 subscribers", func() bool {
		n, err := rc.PubSubNumSub(context.Background(), cluster.BusChannel).Result()
		return err == nil && n[cluster.BusChannel] == 2
	})

	// One that crosses first: the sender's connection is up, so that the
	// stalled ones are written to Redis rather than stuck in a dial.
	sender.Broadcast([]byte(`{"type":"broadcast","payload":0}`), func(int) {})
	lifecycletest.WaitUpTo(t, 10*time.Second, "a first broadcast delivered", func() bool { return delivered.Load() == 1 })
	failedBefore := sent.Snapshot().Cluster[metrics.ClusterOut][metrics.ClusterFailed]

	const stalled = 5
	srv.Pause()
	results := make(chan int, stalled)
	for range stalled {
		sender.Broadcast([]byte(`{"type":"broadcast","payload":1}`), func(remote int) { results <- remote })
	}
	lifecycletest.WaitUpTo(t, 10*cluster.AnswerWait, "the stalled broadcasts counted failed", func() bool {
		return sent.Snapshot().Cluster[metrics.ClusterOut][metrics.ClusterFailed] == failedBefore+stalled
	})
	srv.Resume()
	// Redis runs what waited in its buffers when it resumes, before a
	// broadcast made now: once that one is delivered, any late one has
	// come (a publish that was still dialing never reaches Redis).
	sender.Broadcast([]byte(`{"type":"broadcast","payload":2}`), func(int) {})
	lifecycletest.WaitUpTo(t, 10*time.Second, "a broadcast after the stall delivered", func() bool { return delivered.Load() >= 2 })
	for range stalled {
		if n := <-results; n != 0 {
			t.Errorf("a stalled broadcast's result counted %d remote clients, want 0", n)
		}
	}
	st := got.Snapshot().Cluster[metrics.ClusterIn]
	if n := delivered.Load(); n != 2 || st[metrics.ClusterOK] != 2 {
		t.Errorf("%d broadcasts delivered (in/ok %d), want 2: those before and after the stall, none of those during it", n, st[metrics.ClusterOK])
	}
	t.Logf("of %d broadcasts during the stall, Redis ran %d late, dropped as expired", stalled, st[metrics.ClusterExpired])
}

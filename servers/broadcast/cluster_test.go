package broadcast_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"knowngood/shared/cluster"
	"knowngood/shared/cluster/clustertest"
	"knowngood/shared/config"
	"knowngood/shared/lifecycle/lifecycletest"
)

// clusterPush is the push interval of the cluster tests: short, so that a
// test sees many pushes, yet long beside the work of one on a loaded host.
const clusterPush = 50 * time.Millisecond

// startReplicas starts one in-process replica of each broadcast variant
// on rd, and waits until Redis sees every one subscribed and live, so that
// what follows is a whole cluster's.
func startReplicas(t *testing.T, rd *clustertest.Redis) []*lifecycletest.Target {
	t.Helper()
	var tgs []*lifecycletest.Target
	for _, v := range broadcastTargets() {
		tgs = append(tgs, start(t, v.name, v.build, func(c *config.Config) {
			c.Cluster.Redis = rd.URL
			c.Broadcast.PushInterval = clusterPush
		}))
	}
	waitCluster(t, rd, len(tgs))
	return tgs
}

// waitCluster waits until n replicas are subscribed to the bus and live.
func waitCluster(t *testing.T, rd *clustertest.Redis, n int) {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr()})
	defer rc.Close()
	lifecycletest.WaitUpTo(t, 20*time.Second, fmt.Sprintf("%d replicas subscribed and live", n), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		subs, err := rc.PubSubNumSub(ctx, cluster.BusChannel).Result()
		live, err2 := rc.ZCard(ctx, "knowngood#replicas").Result()
		return err == nil && err2 == nil && subs[cluster.BusChannel] == int64(n) && live == int64(n)
	})
}

// consecutive checks that seqs go up by one each time.
func consecutive(t *testing.T, who string, seqs []uint64) {
	t.Helper()
	for j := 1; j < len(seqs); j++ {
		if seqs[j] != seqs[j-1]+1 {
			t.Fatalf("%s: push seq %d after %d", who, seqs[j], seqs[j-1])
		}
	}
}

// increasing checks that seqs only go up: while Redis is away only the
// lease holder's clients get pushes, so the others see a gap, never a
// step back or a repeat.
func increasing(t *testing.T, who string, seqs []uint64) {
	t.Helper()
	for j := 1; j < len(seqs); j++ {
		if seqs[j] <= seqs[j-1] {
			t.Fatalf("%s: push seq %d after %d", who, seqs[j], seqs[j-1])
		}
	}
}

// TestClusterFanOut: three replicas (gorilla, coder, gnet) on one Redis,
// subscribers on each; a broadcast sent on any replica reaches every
// subscriber of every replica exactly once, its listenerCount is the whole
// cluster's, and the timed push is one stream for the whole cluster: every
// subscriber sees consecutive seqs, each once.
func TestClusterFanOut(t *testing.T) {
	const perReplica, each = 20, 5
	rd := clustertest.StartRedis(t)
	tgs := startReplicas(t, rd)
	var all, senders []*client
	for _, tg := range tgs {
		cs := dialMany(t, tg.URL(), perReplica)
		all = append(all, cs...)
		senders = append(senders, cs[0])
	}
	for s, cl := range senders {
		for k := range each {
			cl.send(t, fmt.Sprintf(`{"type":"broadcast","payload":{"from":%d,"k":%d}}`, s, k))
		}
	}
	want := len(senders) * each
	lifecycletest.WaitUpTo(t, 30*time.Second, "every broadcast at every client, and five pushes", func() bool {
		for _, cl := range all {
			got, pushes := 0, 0
			cl.view(func(cl *client) { got, pushes = len(cl.order), len(cl.pushes) })
			if got < want || pushes < 5 {
				return false
			}
		}
		return true
	})
	lifecycletest.WaitUpTo(t, 10*time.Second, "every result", func() bool {
		for _, cl := range senders {
			if cl.resultCount() < each {
				return false
			}
		}
		return true
	})
	for i, cl := range all {
		cl.view(func(cl *client) {
			if len(cl.order) != want || len(cl.broadcasts) != want {
				t.Fatalf("client %d: %d broadcasts, %d distinct; want %d once each", i, len(cl.order), len(cl.broadcasts), want)
			}
			consecutive(t, fmt.Sprintf("client %d", i), cl.pushes)
		})
	}
	for s, cl := range senders {
		cl.view(func(cl *client) {
			if len(cl.results) != each {
				t.Fatalf("sender %d: %d results, want %d", s, len(cl.results), each)
			}
			for _, r := range cl.results {
				if r.ListenerCount != len(all) {
					t.Errorf("sender %d: listenerCount %d, want %d", s, r.ListenerCount, len(all))
				}
			}
		})
	}
	for i, tg := range tgs {
		st := tg.Stats()
		if len(st.ClusterPartial) != 0 || st.Cluster["out"]["failed"] != 0 || st.Cluster["in"]["failed"] != 0 || st.Cluster["in"]["ok"] < uint64(2*each) {
			t.Errorf("replica %d: partial %v, cluster %v", i, st.ClusterPartial, st.Cluster)
		}
	}
}

// TestClusterRedisRestart: Redis killed mid-run. Each replica keeps
// serving its own clients (none is dropped; a broadcast still reaches its
// replica's clients and its result counts them), counts each broadcast
// that could not cross, and once Redis is back the subscription returns
// by itself and broadcasts cross again.
func TestClusterRedisRestart(t *testing.T) {
	const perReplica = 5
	rd := clustertest.StartRedis(t)
	tgs := startReplicas(t, rd)
	var groups [][]*client
	for _, tg := range tgs {
		groups = append(groups, dialMany(t, tg.URL(), perReplica))
	}
	total := len(tgs) * perReplica
	// broadcastAll sends one broadcast from the first client of each
	// replica and waits for every result; it returns the listenerCounts.
	round := 0
	broadcastAll := func() []int {
		round++
		before := make([]int, len(groups))
		for i, g := range groups {
			before[i] = g[0].resultCount()
			g[0].send(t, fmt.Sprintf(`{"type":"broadcast","payload":{"round":%d,"from":%d}}`, round, i))
		}
		counts := make([]int, len(groups))
		for i, g := range groups {
			lifecycletest.WaitUpTo(t, 10*time.Second, "a result", func() bool { return g[0].resultCount() > before[i] })
			g[0].view(func(cl *client) { counts[i] = cl.results[len(cl.results)-1].ListenerCount })
		}
		return counts
	}
	for _, n := range broadcastAll() {
		if n != total {
			t.Fatalf("listenerCount %d with Redis up, want %d", n, total)
		}
	}

	rd.Stop()
	// Wait until every replica has seen Redis go (a publish attempted
	// before the connection is found dead may still be retried).
	for _, tg := range tgs {
		lifecycletest.WaitUpTo(t, 10*time.Second, "redis errors counted", func() bool {
			return len(tg.Stats().RedisErrors) > 0
		})
	}
	failedBefore := make([]uint64, len(tgs))
	for i, tg := range tgs {
		failedBefore[i] = tg.Stats().Cluster["out"]["failed"]
	}
	for _, n := range broadcastAll() {
		if n != perReplica {
			t.Errorf("listenerCount %d with Redis down, want this replica's %d", n, perReplica)
		}
	}
	// The result went out after at most cluster.AnswerWait; the publish
	// that failed is counted when Redis's refusal or the wait's end comes
	// back, which may be a moment later.
	for i, tg := range tgs {
		lifecycletest.WaitUpTo(t, 10*time.Second, fmt.Sprintf("replica %d counting the broadcast that did not cross", i), func() bool {
			st := tg.Stats()
			partial := uint64(0)
			for _, n := range st.ClusterPartial {
				partial += n
			}
			return st.Cluster["out"]["failed"] > failedBefore[i] && partial >= 1
		})
	}
	// Each client has this round's broadcast from its own replica only.
	for i, g := range groups {
		for j, cl := range g {
			cl.view(func(cl *client) {
				if cl.broadcasts[fmt.Sprintf(`{"round":2,"from":%d}`, i)] != 1 {
					t.Errorf("replica %d client %d: own replica's broadcast not received once: %v", i, j, cl.broadcasts)
				}
			})
		}
	}

	rd.Start()
	waitCluster(t, rd, len(tgs))
	for _, n := range broadcastAll() {
		if n != total {
			t.Errorf("listenerCount %d after Redis returned, want %d", n, total)
		}
	}
	for i, g := range groups {
		for j, cl := range g {
			cl.view(func(cl *client) {
				if len(cl.broadcasts) != 2*len(groups)+1 || cl.closeCode != 0 {
					t.Errorf("replica %d client %d: %d broadcasts (want %d), close code %d", i, j, len(cl.broadcasts), 2*len(groups)+1, cl.closeCode)
				}
				increasing(t, fmt.Sprintf("replica %d client %d", i, j), cl.pushes)
			})
		}
	}
	for i, tg := range tgs {
		if n := tg.Stats().ConnectionsActive; n != perReplica {
			t.Errorf("replica %d: %d connections, want %d", i, n, perReplica)
		}
	}
}

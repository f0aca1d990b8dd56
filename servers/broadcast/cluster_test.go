package broadcast_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/config"
)

// clusterPush is the push interval of the cluster tests: short, so that a
// test sees many pushes, yet long beside the work of one on a loaded host.
// A replica held up past the push lease (two intervals) hands the push
// over, which the stream must survive without a gap.
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

// TestClusterFanOut: a replica per WebSocket library on one Redis,
// subscribers on each; a broadcast sent on any replica reaches every
// subscriber of every replica exactly once, its listenerCount is the whole
// cluster's, and the timed push is one stream for the whole cluster: every
// subscriber sees consecutive seqs, each once.
func TestClusterFanOut(t *testing.T) {
	// 60 subscribers in all whatever the number of libraries (one replica
	// each), so that a library added does not add to the load of a run.
	const each = 5
	perReplica := 60 / len(broadcastTargets())
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
	awaitClients(groups, func(i int, cl *client) bool {
		return cl.broadcasts[fmt.Sprintf(`{"round":2,"from":%d}`, i)] >= 1
	})
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
	// A result says how many members the message was queued to; each of
	// them reads it on its own connection, maybe after the sender's result.
	awaitClients(groups, func(_ int, cl *client) bool { return len(cl.broadcasts) >= 2*len(groups)+1 })
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

// awaitClients waits, up to 10 s, until ok holds for every client of
// groups (read under the client's lock); the checks after it say what is
// missing.
func awaitClients(groups [][]*client, ok func(replica int, cl *client) bool) {
	deadline := time.Now().Add(10 * time.Second)
	for i, g := range groups {
		for _, cl := range g {
			for {
				var done bool
				cl.view(func(cl *client) { done = ok(i, cl) })
				if done || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}

// TestClusterPusherKilled: three replicas as real processes; the one that
// pushes is killed (SIGKILL: no goodbye, its lease simply runs out).
// Another takes the push over, seq still only goes up by one, and
// loadgen's push mode on a surviving replica, its window spanning the
// kill, counts no push lost: the script that numbers a push publishes it
// in the same step, so a kill cannot fall between the two.
func TestClusterPusherKilled(t *testing.T) {
	const interval = 100 * time.Millisecond
	const subscribers = 50
	rd := clustertest.StartRedis(t)
	var procs []*harness.Process
	for _, v := range broadcastTargets() {
		procs = append(procs, harness.Start(t, "-variant", v.name, "-redis", rd.URL, "-push-interval", interval.String()))
	}
	waitCluster(t, rd, len(procs))

	// The holder, by the replica id each process logs when it reaches Redis.
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr()})
	defer rc.Close()
	var holder string
	lifecycletest.WaitUpTo(t, 10*time.Second, "a lease holder", func() bool {
		holder, _ = rc.Get(context.Background(), "knowngood#push#lease").Result()
		return holder != ""
	})
	var victim *harness.Process
	var survivors []*harness.Process
	for _, p := range procs {
		if strings.Contains(p.Log(), `"replica":"`+holder+`"`) {
			victim = p
		} else {
			survivors = append(survivors, p)
		}
	}
	if victim == nil || len(survivors) != len(procs)-1 {
		t.Fatalf("no process logs replica id %s", holder)
	}
	// /health says the replica reaches Redis (admin.RedisState).
	for _, p := range survivors {
		resp, err := http.Get(p.AdminURL() + "/health?require=redis")
		if err != nil {
			t.Fatal(err)
		}
		var h struct{ Redis string }
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || h.Redis != "up" {
			t.Fatalf("/health?require=redis: %s, redis %q (%v)", resp.Status, h.Redis, err)
		}
	}
	var refs []*client
	for _, p := range survivors {
		refs = append(refs, dial(t, "ws://"+p.Addr+"/"))
	}
	target := survivors[0]

	// loadgen's window opens once its connections are open: the kill comes
	// after that and three pushes more, well inside the 3 s window.
	type report struct {
		Subscribers                                  int
		Pushes, Expected, Received, Lost, Duplicates uint64
	}
	var rep report
	loadgenDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, harness.LoadgenT(t), "broadcast", "-url", "ws://"+target.Addr+"/", "-admin", target.AdminURL(),
			"-subscribers", strconv.Itoa(subscribers), "-push", "-duration", "3s", "-json", "-")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		err = harness.LoadgenRan(err, out) // a run that failed its verdicts still has a report: the checks below say what went wrong
		if err == nil {
			err = json.Unmarshal(bytes.TrimSpace(out), &rep)
		}
		if err != nil {
			err = fmt.Errorf("loadgen: %v\n%s", err, stderr.String())
		}
		loadgenDone <- err
	}()
	lifecycletest.WaitUpTo(t, 30*time.Second, "loadgen's subscribers connected", func() bool {
		return target.Stats(t).ConnectionsActive >= subscribers+1
	})
	pushesNow := func(cl *client) (n int) {
		cl.view(func(cl *client) { n = len(cl.pushes) })
		return n
	}
	base := pushesNow(refs[0])
	lifecycletest.WaitUpTo(t, 10*time.Second, "three pushes in loadgen's window", func() bool { return pushesNow(refs[0]) >= base+3 })
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.Exited()
	killedAt := time.Now()
	atKill := make([]int, len(refs))
	for i, cl := range refs {
		atKill[i] = pushesNow(cl)
	}
	for i, cl := range refs {
		lifecycletest.WaitUpTo(t, 10*time.Second, "pushes after the kill", func() bool { return pushesNow(cl) >= atKill[i]+5 })
	}
	var newHolder string
	newHolder, _ = rc.Get(context.Background(), "knowngood#push#lease").Result()
	if newHolder == holder || newHolder == "" {
		t.Errorf("lease holder %q after the kill; was %q", newHolder, holder)
	}
	select {
	case err := <-loadgenDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("loadgen did not finish")
	}

	// Every reference client: seq only goes up, and none is missing; the
	// longest silence is the take-over.
	for i, cl := range refs {
		cl.view(func(cl *client) {
			consecutive(t, fmt.Sprintf("survivor %d", i), cl.pushes)
			var silence time.Duration
			for j := 1; j < len(cl.pushAt); j++ {
				silence = max(silence, cl.pushAt[j].Sub(cl.pushAt[j-1]))
			}
			t.Logf("survivor %d: longest silence %v (interval %v, lease %v), killed at +%v", i, silence, interval, 2*interval, time.Since(killedAt))
			// The lease runs out 2 intervals after the last renewal and the
			// next tick takes it: about 3 intervals; 10 is the margin for a
			// loaded host.
			if silence > 10*interval {
				t.Errorf("survivor %d: %v without a push", i, silence)
			}
		})
	}
	if rep.Duplicates != 0 || rep.Pushes < 10 || rep.Lost != 0 || rep.Expected != uint64(subscribers)*rep.Pushes {
		t.Errorf("loadgen: %+v; want none lost, no duplicates", rep)
	}
	t.Logf("loadgen: %+v", rep)
}

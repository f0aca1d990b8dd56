package socketio_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/hops"
)

// TestHopStamps: an argument with a "hops" object gets the replica's
// stamps, in order (rx, tx, and dlv on the replica that read it from
// Redis), and each replica times the hops it saw; an argument without
// one comes back as it was sent.
func TestHopStamps(t *testing.T) { forReplicaEnginesAlone(t, testHopStamps) }

// forReplicaEnginesAlone is forReplicaEngines for a test without Node.
func forReplicaEnginesAlone(t *testing.T, test func(t *testing.T, engines [2]string)) {
	t.Parallel()
	for _, e := range replicaEngines {
		t.Run(e[0]+"+"+e[1], func(t *testing.T) {
			t.Parallel()
			test(t, e)
		})
	}
}

func testHopStamps(t *testing.T, engines [2]string) {
	rd := clustertest.StartRedis(t)
	var replicas []*target
	for _, engine := range engines {
		replicas = append(replicas, start(t, engine, socketio.Empty, func(c *config.Config) { c.Cluster.Redis = rd.URL }))
	}
	rdb := redis.NewClient(&redis.Options{Addr: rd.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	const ch = "socket.io-request#/#"
	waitFor(t, "2 replicas subscribed", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := rdb.PubSubNumSub(ctx, ch).Result()
		return err == nil && n[ch] == 2
	})
	ws := []string{"websocket"}
	member := dial(t, replicas[0].url, "/", ws, nil)
	sender := dial(t, replicas[1].url, "/", ws, nil)
	member.emitAck(t, "join", "r")

	sent := time.Now().UnixMicro()
	stamped := map[string]any{hops.SendTime: sent, hops.Field: map[string]any{}, "n": 1}
	ack := sender.emitAck(t, "echo", "plain", map[string]any{"hops": 5}, stamped)
	if len(ack) != 3 || ack[0] != "plain" {
		t.Fatalf("echo ack %v", ack)
	}
	if h, ok := ack[1].(map[string]any); !ok || h["hops"] != float64(5) || len(h) != 1 {
		t.Errorf("an argument whose hops is no object came back as %v", ack[1])
	}
	checkStamps(t, "echo ack", ack[2], sent, hops.Received, hops.Sent)

	sender.emitAck(t, "broadcast-room", "r", stamped)
	for {
		e := member.nextEvent(t)
		if len(e) == 2 && e[0] == "broadcast" {
			checkStamps(t, "broadcast through Redis", e[1], sent, hops.Received, hops.Sent, hops.Delivered)
			break
		}
	}

	for i, want := range [][]string{{hops.Redis}, {hops.ClientToReplica, hops.Replica}} {
		got := replicas[i].metrics.Snapshot().Hops
		for _, hop := range want {
			if got[hop].Latency.Count == 0 {
				t.Errorf("replica %d: /stats hops[%s] counted nothing (hops %v)", i, hop, got)
			}
		}
	}
}

// checkStamps checks that arg carries the client's fields and the stamps
// in order, none before sent.
func checkStamps(t *testing.T, what string, arg any, sent int64, order ...string) {
	t.Helper()
	obj, ok := arg.(map[string]any)
	if !ok || obj["n"] != float64(1) || obj[hops.SendTime] != float64(sent) {
		t.Fatalf("%s: %v, want the client's fields kept", what, arg)
	}
	h, _ := obj[hops.Field].(map[string]any)
	last := float64(sent)
	for _, stamp := range order {
		v, ok := h[stamp].(float64)
		if !ok || v < last {
			t.Errorf("%s: stamp %s = %v in %v, want one at or after %.0f", what, stamp, h[stamp], h, last)
		}
		last = v
	}
	if len(h) != len(order) {
		t.Errorf("%s: stamps %v, want exactly %v", what, h, order)
	}
}

package socketio_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/prereq"
)

// pushListen runs scripts/clients/sio-push.mjs, one socket.io-client
// socket on url for d, and returns what it saw.
type pushSeen struct {
	Connected, Received, Missed, Duplicates int
	Seqs                                    map[string]int64
}

func pushListen(t *testing.T, url string, d time.Duration) <-chan pushSeen {
	seen := make(chan pushSeen, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "node", "../../scripts/clients/sio-push.mjs", "--url", url, "--n", "1",
			"--duration-ms", strconv.Itoa(int(d.Milliseconds())), "--seqs").Output()
		var s pushSeen
		if err != nil || json.Unmarshal(out, &s) != nil || s.Connected != 1 {
			t.Errorf("sio-push.mjs on %s: %v, %q", url, err, out)
		}
		seen <- s
	}()
	return seen
}

// TestClusterPush: with -redis, the replicas push as one: a client on
// either sees one numbering (the same seq carries the same sentAt on both,
// none missed or twice), and when one replica stops, the other goes on
// with the next seq.
func TestClusterPush(t *testing.T) {
	if _, err := os.Stat("../../scripts/node_modules/socket.io-client/package.json"); err != nil {
		prereq.Need(t, "socket.io-client (scripts/node_modules)", err)
	}
	redis := clustertest.StartRedis(t)
	var replicas []*target
	for _, engine := range engines {
		replicas = append(replicas, start(t, engine, socketio.Empty, func(cfg *config.Config) {
			cfg.Cluster.Redis = redis.URL
			cfg.Broadcast.PushInterval = 50 * time.Millisecond
		}))
	}
	a, b := pushListen(t, replicas[0].url, 1500*time.Millisecond), pushListen(t, replicas[1].url, 3*time.Second)
	seenA := <-a
	replicas[0].shutdown(t) // the other goes on, holding the lease or taking it
	seenB := <-b
	common := 0
	for seq, sentAt := range seenA.Seqs {
		if other, ok := seenB.Seqs[seq]; ok {
			common++
			if other != sentAt {
				t.Errorf("seq %s sent at %d on one replica, %d on the other: two numberings", seq, sentAt, other)
			}
		}
	}
	for i, s := range []pushSeen{seenA, seenB} {
		if s.Received < 5 || s.Missed != 0 || s.Duplicates != 0 {
			t.Errorf("client on replica %d: %d pushes, %d missed, %d twice; want 5 or more, none missed or twice", i, s.Received, s.Missed, s.Duplicates)
		}
	}
	if common < 3 {
		t.Errorf("%d seqs seen on both replicas; want 3 or more", common)
	}
}

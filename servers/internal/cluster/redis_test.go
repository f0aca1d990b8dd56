package cluster_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dial joins a replica, with metrics of its own, to srv until the test
// ends.
func dial(t *testing.T, srv *clustertest.Redis) (*cluster.Redis, *metrics.Metrics) {
	t.Helper()
	m := metrics.New(prometheus.NewRegistry(), "broadcast-gorilla")
	r, err := cluster.Dial(srv.URL, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r, m
}

// waitState waits for the replica's view of Redis to become want.
func waitState(t *testing.T, r *cluster.Redis, want string) {
	t.Helper()
	lifecycletest.WaitUpTo(t, 10*time.Second, "redis state "+want, func() bool { return r.RedisState() == want })
}

// TestRedisStateFollowsServer: the state is up while redis-server runs,
// down (and counted) once it is killed, and up again after a restart on
// the same port, without anything but the replica's own reconnecting.
func TestRedisStateFollowsServer(t *testing.T) {
	t.Parallel() // a Redis of its own
	srv := clustertest.StartRedis(t)
	r, m := dial(t, srv)
	waitState(t, r, "up")
	srv.Stop()
	waitState(t, r, "down")
	if n := m.Snapshot().RedisErrors[metrics.RedisHeartbeat]; n == 0 {
		t.Errorf("redis_errors{op=heartbeat} = 0 after Redis went away")
	}
	srv.Start()
	waitState(t, r, "up")
}

func TestDialRefusesBadURL(t *testing.T) {
	if _, err := cluster.Dial("http://127.0.0.1:6379", nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("Dial accepted an http:// URL")
	}
}

package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/metrics/metricstest"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestLint runs the Prometheus linter over every metric: names, units,
// suffixes, help text.
func TestLint(t *testing.T) {
	reg := metrics.NewRegistry()
	m := metrics.New(reg, "empty")
	m.Opened()
	m.Handshake(protocol.ResultOK, "websocket", time.Millisecond)
	m.Closed("transport close")
	m.EnableBroadcast()
	m.Fanout(time.Millisecond)
	m.Fault("drop")
	m.Invalid("unknown_type")
	m.AcceptError("EMFILE")
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestNames pins the metric names that servers/README.md and the dashboards promise.
func TestNames(t *testing.T) {
	reg := metrics.NewRegistry()
	metricstest.RecordAll(metrics.New(reg, "empty"))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := metricstest.Names(t, reg)
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "knowngood_") {
			for _, metric := range f.GetMetric() {
				if !hasLabel(metric.GetLabel(), "variant", "empty") && f.GetName() != "knowngood_build_info" {
					t.Errorf("%s has no variant label", f.GetName())
				}
			}
		}
	}
	for _, name := range []string{
		"knowngood_connections_active", "knowngood_connections_total",
		"knowngood_handshakes_total", "knowngood_handshake_duration_seconds",
		"knowngood_messages_received_total", "knowngood_messages_sent_total",
		"knowngood_received_bytes_total", "knowngood_sent_bytes_total",
		"knowngood_disconnects_total", "knowngood_broadcast_fanout_seconds",
		"knowngood_broadcast_dropped_total", "knowngood_faults_total",
		"knowngood_invalid_messages_total",
		"knowngood_accept_errors_total", "knowngood_build_info",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if !have[name] {
			t.Errorf("metric %s is missing", name)
		}
	}
}

func hasLabel[L interface {
	GetName() string
	GetValue() string
}](labels []L, name, value string) bool {
	for _, l := range labels {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestSnapshot checks that /stats reports what was recorded.
func TestSnapshot(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry(), "async")
	for i := range 10 {
		m.Opened()
		m.Handshake(protocol.ResultOK, "polling", time.Duration(i+1)*time.Millisecond)
	}
	m.Handshake(protocol.ResultAbandoned, "websocket", 0)
	m.Received(1, 5)
	m.Sent(1, 7)
	m.Closed("ping timeout")
	s := m.Snapshot()
	if s.Variant != "async" || s.ConnectionsActive != 9 || s.ConnectionsTotal != 10 {
		t.Errorf("connections: %+v", s)
	}
	if s.Handshakes["ok"] != 10 || s.Handshakes["abandoned"] != 1 || s.HandshakesByTransport["polling"]["ok"] != 10 {
		t.Errorf("handshakes: %v %v", s.Handshakes, s.HandshakesByTransport)
	}
	if l := s.HandshakeLatency; l.Count != 10 || l.Max < 0.0099 || l.Max > 0.0101 || l.P50 < 0.0049 || l.P50 > 0.0051 {
		t.Errorf("latency: %+v", l)
	}
	if s.MessagesReceived != 1 || s.BytesReceived != 5 || s.MessagesSent != 1 || s.BytesSent != 7 || s.Disconnects["ping timeout"] != 1 {
		t.Errorf("messages: %+v", s)
	}
	if s.CPUSeconds < 0 || s.ResidentBytes == 0 {
		t.Errorf("process figures missing: cpu %v rss %v", s.CPUSeconds, s.ResidentBytes)
	}
}

// TestSnapshotSeesCloseWhole: a snapshot that finds a connection gone from
// connections_active also finds its disconnect. loadgen waits for
// connections_active to fall and then reports the disconnects; a snapshot
// taken between the two counts once reported "none".
func TestSnapshotSeesCloseWhole(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry(), "empty")
	const conns = 2000
	for range conns {
		m.Opened()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range conns {
			m.Closed("transport close")
		}
	}()
	for snapshots := 0; ; snapshots++ {
		s := m.Snapshot()
		gone := int64(s.ConnectionsTotal) - s.ConnectionsActive
		if counted := int64(s.Disconnects["transport close"]); counted < gone {
			t.Fatalf("snapshot %d: %d connections gone from connections_active, %d disconnects counted", snapshots, gone, counted)
		}
		if s.ConnectionsActive == 0 {
			break
		}
	}
	<-done
}

// TestNil checks that a nil *Metrics (-metrics=false) records nothing and
// does not panic.
func TestNil(t *testing.T) {
	var m *metrics.Metrics
	m.Opened()
	m.Closed("x")
	m.Handshake(protocol.ResultOK, "websocket", time.Second)
	m.Received(1, 1)
	m.Sent(1, 1)
	m.Received(1, 0)
	m.Sent(1, 0)
	m.Received(0, 1)
	m.Sent(0, 1)
	m.EnableBroadcast()
	m.Fanout(time.Second)
	m.Dropped(1)
	m.Fault("x")
	m.AcceptError("x")
}

// TestBroadcastSeries: the broadcast series are registered by
// EnableBroadcast alone; before it Fanout and Dropped record nothing and
// /stats shows no drops, after it they count from zero.
func TestBroadcastSeries(t *testing.T) {
	reg := metrics.NewRegistry()
	m := metrics.New(reg, "echo-tcp")
	m.Fanout(time.Millisecond)
	m.Dropped(3)
	names := func() map[string]bool { return metricstest.Names(t, reg) }
	for _, name := range []string{"knowngood_broadcast_fanout_seconds", "knowngood_broadcast_dropped_total"} {
		if names()[name] {
			t.Errorf("%s is exposed before EnableBroadcast", name)
		}
	}
	if s := m.Snapshot(); s.BroadcastDropped != 0 {
		t.Errorf("dropped %d before EnableBroadcast", s.BroadcastDropped)
	}
	m.EnableBroadcast()
	for _, name := range []string{"knowngood_broadcast_fanout_seconds", "knowngood_broadcast_dropped_total"} {
		if !names()[name] {
			t.Errorf("%s is missing after EnableBroadcast", name)
		}
	}
	m.Dropped(2)
	m.EnableBroadcast()
	if s := m.Snapshot(); s.BroadcastDropped != 2 {
		t.Errorf("dropped %d after EnableBroadcast and two drops, want 2", s.BroadcastDropped)
	}
}

// TestCountsApart checks that a target counting messages and bytes at
// different levels (msgs or bytes 0) records exactly what it gives.
func TestCountsApart(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry(), "empty")
	m.Received(3, 0)
	m.Received(0, 100)
	m.Sent(2, 0)
	m.Sent(0, 50)
	m.Received(4, 40)
	m.Sent(0, 0)
	s := m.Snapshot()
	if s.MessagesReceived != 7 || s.BytesReceived != 140 || s.MessagesSent != 2 || s.BytesSent != 50 {
		t.Errorf("received %d msgs %d bytes, sent %d msgs %d bytes; want 7 140 2 50",
			s.MessagesReceived, s.BytesReceived, s.MessagesSent, s.BytesSent)
	}
}

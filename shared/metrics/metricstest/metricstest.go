// Package metricstest gives the tests that pin a target's metric names (and
// the dashboard's queries against them) a registry where every series
// shows: a vector shows up in a scrape only once it has a child.
package metricstest

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// RecordEvery records one of each series that every variant has on m.
func RecordEvery(m *metrics.Metrics) {
	m.Opened()
	m.Handshake(protocol.ResultOK, "websocket", time.Millisecond)
	m.Received(1, 1)
	m.Sent(1, 1)
	m.Closed("1000")
	m.Fault("drop")
	m.Invalid("unknown_type")
	m.AcceptError("EMFILE")
	m.Timeout(metrics.ListenerTarget, metrics.StageHeader)
	m.Refused("unknown_sid")
	m.RedisError(metrics.RedisPublish)
	m.Cluster(metrics.ClusterOut, metrics.ClusterOK, 1)
	m.ClusterPartial(metrics.PartialUnpublished)
	m.LoopHold(metrics.HoldGone)
	m.Interop(metrics.InteropChunkedPost)
	m.Subprotocol("graphql-transport-ws")
	m.TLSFailure("no_certificate")
	m.NamespaceConnect("/chat")
	m.Control("drop")
	m.Recovery("recovered")
	m.Opened()
	m.AdminUISession("websocket")
	m.AdminUIDropped(metrics.AdminUIQueueFull, 1)
}

// RecordAll is RecordEvery, then the broadcast series, which it enables.
func RecordAll(m *metrics.Metrics) {
	RecordEvery(m)
	m.EnableBroadcast()
	m.Fanout(time.Millisecond)
	m.Dropped(1)
}

// Names is every name in reg that a PromQL query can use: each family's,
// and a histogram's _bucket, _sum and _count series.
func Names(t testing.TB, reg prometheus.Gatherer) map[string]bool {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+s] = true
			}
		}
	}
	return names
}

// Counter is the value of the counter name{label="value"} that reg holds
// (0 when it has none).
func Counter(t testing.TB, reg prometheus.Gatherer, name, label, value string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

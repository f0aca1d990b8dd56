package metrics

import (
	"runtime"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/schedlat"
)

// Snapshot returns the /stats document: the registry's own figures, so that
// /stats and /metrics never disagree, plus exact handshake percentiles.
//
// connections_active is read first, apart from the rest: the registry
// gathers its metrics in no set order, and a connection that ends meanwhile
// could otherwise be gone from connections_active and yet missing from
// disconnects. Read first, every count recorded before a connection left
// it is in the document.
func (m *Metrics) Snapshot() protocol.Stats {
	var active dto.Metric
	_ = m.connectionsActive.Write(&active) // a gauge's Write never fails
	s := m.emptyStats(int64(active.GetGauge().GetValue()))
	byLabel, counts := byLabel(&s), counts(&s)
	families, _ := m.stats.Gather()
	for _, mf := range families {
		for _, metric := range mf.GetMetric() {
			if n, ok := counts[mf.GetName()]; ok {
				*n = uint64(metric.GetCounter().GetValue() + metric.GetGauge().GetValue())
				continue
			}
			if c, ok := byLabel[mf.GetName()]; ok {
				c.counts[label(metric, c.label)] = uint64(metric.GetCounter().GetValue())
				continue
			}
			addMetric(&s, mf.GetName(), metric)
		}
	}
	s.Storm = m.storm.report()
	if q, ok := m.readListenQueue(); ok {
		s.ListenQueue = &q
	}
	s.Goroutines = runtime.NumGoroutine()
	s.SchedLatency = protocol.DistributionOf(schedlat.Buckets())
	m.mu.Lock()
	s.HandshakeLatency = protocol.LatencyOf(m.handshakeHist)
	s.HandshakeHistogram = protocol.Buckets(m.handshakeHist)
	for hop, h := range m.hopHist {
		if s.Hops == nil {
			s.Hops = map[string]protocol.Distribution{}
		}
		s.Hops[hop] = protocol.DistributionOf(protocol.Buckets(h))
	}
	m.mu.Unlock()
	return s
}

// emptyStats is the document before the registry is read: every map made,
// and every handshake result there with 0, so a reader diffing two
// documents finds each.
func (m *Metrics) emptyStats(active int64) protocol.Stats {
	s := protocol.Stats{
		Variant:               m.variant,
		ConnectionsActive:     active,
		UptimeSeconds:         time.Since(m.started).Seconds(),
		Handshakes:            map[string]uint64{},
		HandshakesByTransport: map[string]map[string]uint64{},
		Disconnects:           map[string]uint64{},
		Faults:                map[string]uint64{},
		InvalidMessages:       map[string]uint64{},
		AcceptErrors:          map[string]uint64{},
		Timeouts:              map[string]map[string]uint64{},
		RefusedRequests:       map[string]uint64{},
		RedisErrors:           map[string]uint64{},
		Cluster:               map[string]map[string]uint64{},
		ClusterPartial:        map[string]uint64{},
		LoopHolds:             map[string]uint64{},
		InteropRequests:       map[string]uint64{},
		Subprotocols:          map[string]uint64{},
		TLSFailures:           map[string]uint64{},
		Namespaces:            map[string]uint64{},
		Controls:              map[string]uint64{},
		Recoveries:            map[string]uint64{},
	}
	for _, r := range []string{protocol.ResultOK, protocol.ResultRejected, protocol.ResultFailed, protocol.ResultAbandoned} {
		s.Handshakes[r] = 0
	}
	return s
}

// labelled is a counter of s kept by one label's value.
type labelled struct {
	counts map[string]uint64
	label  string
}

// byLabel maps the counters that s keeps by one label to where they go.
func byLabel(s *protocol.Stats) map[string]labelled {
	return map[string]labelled{
		"knowngood_disconnects_total":             {s.Disconnects, "reason"},
		"knowngood_invalid_messages_total":        {s.InvalidMessages, "reason"},
		"knowngood_faults_total":                  {s.Faults, "kind"},
		"knowngood_accept_errors_total":           {s.AcceptErrors, "reason"},
		"knowngood_refused_requests_total":        {s.RefusedRequests, "reason"},
		"knowngood_cluster_partial_results_total": {s.ClusterPartial, "reason"},
		"knowngood_redis_errors_total":            {s.RedisErrors, "op"},
		"knowngood_loop_holds_total":              {s.LoopHolds, "client"},
		"knowngood_interop_requests_total":        {s.InteropRequests, "kind"},
		"knowngood_subprotocols_total":            {s.Subprotocols, "subprotocol"},
		"knowngood_tls_failures_total":            {s.TLSFailures, "cause"},
		"knowngood_namespace_connects_total":      {s.Namespaces, "namespace"},
		"knowngood_controls_total":                {s.Controls, "action"},
		"knowngood_recoveries_total":              {s.Recoveries, "result"},
	}
}

// counts maps the single counts of s (no label kept) to their fields.
func counts(s *protocol.Stats) map[string]*uint64 {
	return map[string]*uint64{
		"knowngood_connections_total":       &s.ConnectionsTotal,
		"knowngood_messages_received_total": &s.MessagesReceived,
		"knowngood_messages_sent_total":     &s.MessagesSent,
		"knowngood_received_bytes_total":    &s.BytesReceived,
		"knowngood_sent_bytes_total":        &s.BytesSent,
		"knowngood_broadcast_dropped_total": &s.BroadcastDropped,
		"knowngood_max_conns_refused_total": &s.MaxConnsRefused,
		"process_resident_memory_bytes":     &s.ResidentBytes,
	}
}

// addMetric puts one sample of the metric family name into s, for the
// families neither counts nor byLabel place.
func addMetric(s *protocol.Stats, name string, metric *dto.Metric) {
	value := metric.GetCounter().GetValue() + metric.GetGauge().GetValue()
	n := uint64(value)
	switch name {
	case "knowngood_handshakes_total":
		result := label(metric, "result")
		s.Handshakes[result] += n
		addNested(s.HandshakesByTransport, label(metric, "transport"), result, n)
	case "knowngood_timeouts_total":
		addNested(s.Timeouts, label(metric, "listener"), label(metric, "stage"), n)
	case "knowngood_cluster_messages_total":
		addNested(s.Cluster, label(metric, "direction"), label(metric, "result"), n)
	case "process_cpu_seconds_total":
		s.CPUSeconds = value
	}
}

// addNested adds n to m[outer][inner], making m[outer] when it is new.
func addNested(m map[string]map[string]uint64, outer, inner string, n uint64) {
	if m[outer] == nil {
		m[outer] = map[string]uint64{}
	}
	m[outer][inner] += n
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

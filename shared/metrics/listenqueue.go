package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/shared/protocol"
)

// SetListenQueue gives the metrics what reads the kernel's side of the
// target's listener (servers/internal/lifecycle does, once it listens):
// /stats "listen_queue" and the listen_* and accept_queue* metrics come
// from it.
func (m *Metrics) SetListenQueue(read func() protocol.ListenQueue) {
	if m != nil {
		m.listenQueue.Store(&read)
	}
}

// readListenQueue is the listener's figures; false before any reader.
func (m *Metrics) readListenQueue() (protocol.ListenQueue, bool) {
	if r := m.listenQueue.Load(); r != nil {
		return (*r)(), true
	}
	return protocol.ListenQueue{}, false
}

// listenQueueCollector serves the listener's figures at each scrape, from
// one read of the kernel's (one file and one socket option) for all four.
type listenQueueCollector struct {
	m                               *Metrics
	overflows, drops, queued, limit *prometheus.Desc
}

func newListenQueueCollector(m *Metrics, labels prometheus.Labels) *listenQueueCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, nil, labels)
	}
	perNamespace := " Counted by the kernel for the target's whole network namespace (every listener in it), since the target started."
	return &listenQueueCollector{
		m:         m,
		overflows: desc("listen_overflows_total", "Connects whose handshake completed while a listener's accept queue was full (TcpExt ListenOverflows)."+perNamespace),
		drops:     desc("listen_drops_total", "Connects dropped at a listener for any reason, the overflows among them (TcpExt ListenDrops)."+perNamespace),
		queued:    desc("accept_queue", "Handshakes waiting in the target's own accept queue now (-1 where it cannot be read: not Linux)."),
		limit:     desc("accept_queue_limit", "The most the target's accept queue holds: the backlog in effect, -backlog capped by net.core.somaxconn (-1 where it cannot be read)."),
	}
}

func (c *listenQueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.overflows
	ch <- c.drops
	ch <- c.queued
	ch <- c.limit
}

// Collect reports zeros until the target listens, so that every series is
// there from the first scrape.
func (c *listenQueueCollector) Collect(ch chan<- prometheus.Metric) {
	q, _ := c.m.readListenQueue()
	ch <- prometheus.MustNewConstMetric(c.overflows, prometheus.CounterValue, float64(q.Overflows))
	ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(q.Drops))
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(q.Queued))
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(q.Limit))
}

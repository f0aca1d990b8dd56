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

// registerListenQueue exposes the listener's figures, read at each scrape,
// on reg alone: Snapshot reads them once itself.
func (m *Metrics) registerListenQueue(reg prometheus.Registerer, labels prometheus.Labels) {
	value := func(pick func(protocol.ListenQueue) float64) func() float64 {
		return func() float64 {
			q, ok := m.readListenQueue()
			if !ok {
				return 0
			}
			return pick(q)
		}
	}
	opts := func(name, help string) (prometheus.CounterOpts, prometheus.GaugeOpts) {
		return prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels},
			prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels}
	}
	perNamespace := " Counted by the kernel for the target's whole network namespace (every listener in it), since the target started."
	overflows, _ := opts("listen_overflows_total", "Connects whose handshake completed while a listener's accept queue was full (TcpExt ListenOverflows)."+perNamespace)
	drops, _ := opts("listen_drops_total", "Connects dropped at a listener for any reason, the overflows among them (TcpExt ListenDrops)."+perNamespace)
	_, queued := opts("accept_queue", "Handshakes waiting in the target's own accept queue now (-1 where it cannot be read: not Linux).")
	_, limit := opts("accept_queue_limit", "The most the target's accept queue holds: the backlog in effect, -backlog capped by net.core.somaxconn (-1 where it cannot be read).")
	reg.MustRegister(
		prometheus.NewCounterFunc(overflows, value(func(q protocol.ListenQueue) float64 { return float64(q.Overflows) })),
		prometheus.NewCounterFunc(drops, value(func(q protocol.ListenQueue) float64 { return float64(q.Drops) })),
		prometheus.NewGaugeFunc(queued, value(func(q protocol.ListenQueue) float64 { return float64(q.Queued) })),
		prometheus.NewGaugeFunc(limit, value(func(q protocol.ListenQueue) float64 { return float64(q.Limit) })),
	)
}

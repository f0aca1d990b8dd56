// Package metrics defines every metric of knowngood, once, on the registry
// its caller gives (see New). Servers record through the methods of *Metrics; a nil
// *Metrics records nothing, which is how -metrics=false builds a target
// without instrumentation.
//
// New registers the series every variant records. A series that only one
// family of variants can record is registered by that family's target when
// it is built (EnableBroadcast), so that /metrics never shows a variant a
// series that stays at zero because the variant cannot move it: echo-tcp
// has no broadcast_fanout_seconds. A labelled series (a vector) appears
// only once something is counted under it, so it needs no such step.
package metrics

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/knowngood/knowngood/shared/protocol"
)

const namespace = "knowngood"

// Metrics holds the collectors of one process.
type Metrics struct {
	variant string
	started time.Time
	// stats holds the same collectors as the caller's registry, plus a
	// process collector, so that Snapshot reads back the very figures
	// /metrics serves without needing more of the caller than a
	// Registerer.
	stats *prometheus.Registry
	f     factory
	// listenQueue reads the kernel's side of the target's listener
	// (SetListenQueue); nil until the target listens.
	listenQueue atomic.Pointer[func() protocol.ListenQueue]

	connectionsActive prometheus.Gauge
	connectionsTotal  prometheus.Counter
	handshakes        *prometheus.CounterVec
	handshakeDuration *prometheus.HistogramVec
	messagesReceived  prometheus.Counter
	messagesSent      prometheus.Counter
	receivedBytes     prometheus.Counter
	sentBytes         prometheus.Counter
	disconnects       *prometheus.CounterVec
	broadcastOnce     sync.Once
	fanout            prometheus.Histogram // nil until EnableBroadcast
	dropped           prometheus.Counter   // nil until EnableBroadcast
	invalid           *prometheus.CounterVec
	faults            *prometheus.CounterVec
	acceptErrors      *prometheus.CounterVec
	capRefused        prometheus.Counter
	timeouts          *prometheus.CounterVec
	refused           *prometheus.CounterVec
	redisErrors       *prometheus.CounterVec
	cluster           *prometheus.CounterVec
	clusterPartial    *prometheus.CounterVec
	loopHolds         *prometheus.CounterVec
	interop           *prometheus.CounterVec
	subprotocols      *prometheus.CounterVec
	tlsFailures       *prometheus.CounterVec
	namespaces        *prometheus.CounterVec
	controls          *prometheus.CounterVec
	recoveries        *prometheus.CounterVec
	adminUISessions   *prometheus.CounterVec
	adminUIDropped    *prometheus.CounterVec
	storm             stormWatch
	hops              *prometheus.HistogramVec

	// handshakeHist keeps exact percentiles for /stats, which the
	// Prometheus histogram's buckets cannot give.
	mu            sync.Mutex
	handshakeHist *hdrhistogram.Histogram
	hopHist       map[string]*hdrhistogram.Histogram // by hop, made on first sight
}

// NewRegistry is a target process's own registry, never the global one:
// the Go and process collectors, for New to add the knowngood metrics to.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// New registers the knowngood metrics every variant records on reg (the
// broadcast family's come with EnableBroadcast); variant becomes a constant
// label. The caller owns reg: a target's comes from NewRegistry.
func New(reg prometheus.Registerer, variant string) *Metrics {
	stats := prometheus.NewRegistry()
	stats.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := factory{regs: []prometheus.Registerer{reg, stats}, labels: prometheus.Labels{"variant": variant}}
	m := &Metrics{
		variant: variant,
		started: time.Now(),
		stats:   stats,
		f:       f,

		connectionsActive: f.gauge("connections_active", "Connections open now (Engine.IO sessions for Socket.IO)."),
		connectionsTotal:  f.counter("connections_total", "Connections accepted since start (Engine.IO sessions for Socket.IO)."),
		handshakes: f.counterVec("handshakes_total",
			"Handshakes by result: ok, rejected (503 or connect error), failed (the server gave up or the request was bad), abandoned (the client left first).",
			"result", "transport"),
		handshakeDuration: f.histogramVec("handshake_duration_seconds",
			"Completed handshakes, from the upgrade or Engine.IO open request to the moment the server's side is done (the CONNECT ack for Socket.IO).",
			prometheus.ExponentialBucketsRange(0.0005, 60, 24), "transport"),
		messagesReceived: f.counter("messages_received_total", "Messages received from clients (WebSocket messages; Socket.IO events)."),
		messagesSent:     f.counter("messages_sent_total", "Messages sent to clients (WebSocket messages; Socket.IO events and acks)."),
		receivedBytes:    f.counter("received_bytes_total", "Payload bytes received from clients."),
		sentBytes:        f.counter("sent_bytes_total", "Payload bytes sent to clients."),
		disconnects:      f.counterVec("disconnects_total", "Connections closed, by close code or reason.", "reason"),
		invalid: f.counterVec("invalid_messages_total",
			"Messages the target could not act on and answered with an error, by reason (broadcast: malformed_json, unknown_type).", "reason"),
		faults: f.counterVec("faults_total", "Known-bad faults injected, by kind.", "kind"),
		acceptErrors: f.counterVec("accept_errors_total",
			"Connections refused because accepting them failed, by reason (EMFILE, ENFILE, ...): each refused connection once.", "reason"),
		capRefused: f.counter("max_conns_refused_total",
			"Handshakes refused with HTTP 503 because -max-conns connections were held; each is also a rejected handshake."),
		timeouts: f.counterVec("timeouts_total",
			"Connections the server closed because the client was too slow or too quiet, by listener (target, admin) and stage: "+
				"header (-handshake-timeout), body (-body-timeout), idle (-idle-timeout between HTTP requests; echo-tcp: -ping-interval plus -ping-timeout). "+
				"WebSocket and Engine.IO ping timeouts are disconnects_total reasons.",
			"listener", "stage"),
		refused: f.counterVec("refused_requests_total",
			"HTTP requests refused outside a handshake's count, by reason: unknown_sid (a polling request or upgrade for an Engine.IO session this replica does not hold, "+
				"as behind a balancer without sticky sessions), ...", "reason"),
		redisErrors: f.counterVec("redis_errors_total",
			"Redis operations that failed (-redis), by op: publish, receive, count, lease, heartbeat, request. The replica goes on serving its own clients.", "op"),
		cluster: f.counterVec("cluster_messages_total",
			"Messages between replicas through Redis (-redis), by direction and result: out/ok published, out/failed could not be published "+
				"(a broadcast that reached only this replica's clients), in/ok received from another replica, in/failed received but not understood, "+
				"in/expired received after its sender's bound (Redis stalled; dropped, never delivered late).",
			"direction", "result"),
		clusterPartial: f.counterVec("cluster_partial_results_total",
			"Broadcasts (-redis) whose broadcastResult.listenerCount counts fewer replicas than were live, by reason: "+
				"unpublished (Redis refused or the publish queue was full: this replica's clients only), missed (a live replica was not subscribed), "+
				"timeout (a replica that got it did not answer within the wait), overflow (too many broadcasts waiting: this replica's clients only).",
			"reason"),
		loopHolds: f.counterVec("loop_holds_total",
			"Connect handlers that froze the blocking target's one loop for -delay, by whether their client was still there (present) or had gone (gone): "+
				"python-socketio and Node's socket.io run the handler of a client that left, so this target does too.", "client"),
		interop: f.counterVec("interop_requests_total",
			"Requests this target served that a known server mishandles, by kind: chunked_post, a polling POST without Content-Length "+
				"(Transfer-Encoding: chunked, as the zishang520 Go client sends), which python-engineio 4 reads as empty: it answers 200 OK and drops the packets.", "kind"),
		subprotocols: f.counterVec("subprotocols_total",
			"WebSocket connections opened with a subprotocol (-subprotocols), by the subprotocol the server answered with; "+
				"none: the client offered some, none of them served.", "subprotocol"),
		namespaces: f.counterVec("namespace_connects_total",
			"Socket.IO: namespace CONNECTs acknowledged, by namespace (at most 1002 names: /, /custom and 1000 made by clients, or -namespaces).", "namespace"),
		controls: f.counterVec("controls_total",
			"Orders carried out from the admin listener at run time (/control/...), by action: drop (a fraction of the clients closed now), push (the timed push started, changed or stopped), "+
				"fault (the known-bad modes switched).", "action"),
		recoveries: f.counterVec("recoveries_total",
			"Socket.IO connection state recovery (-recovery), by result: recovered (a socket came back with its id, rooms and missed events), "+
				"missed (a client came back with its private id and was not recovered: expired, or its offset let go), "+
				"evicted_session and evicted_packet (let go before the window ended, over the native engine's bounds).", "result"),
		adminUISessions: f.counterVec("admin_ui_sessions_total",
			"Socket.IO (-admin-ui): Engine.IO sessions whose first namespace was /admin, the Socket.IO Admin UI's, by the transport they opened on. "+
				"Each is in connections_total (counted at its open, before its namespace is known) and in no other figure: "+
				"not in connections_active, handshakes, messages, bytes, disconnects or namespace_connects.", "transport"),
		adminUIDropped: f.counterVec("admin_ui_dropped_total",
			"Socket.IO (-admin-ui): notifications for the Admin UI not sent, by reason: queue_full (the bounded queue of notifications waiting to be sent was full), "+
				"slow_reader (the Admin UI's session had too many packets unwritten, a UI that reads slower than the notifications come; counted once per notification and Admin UI).", "reason"),
		tlsFailures: f.counterVec("tls_failures_total",
			"TLS handshakes that failed on the target's listener (-tls-cert), by cause: no_certificate, unknown_authority, expired, bad_certificate "+
				"(-tls-client-ca: the client certificate missing or refused), timeout (-handshake-timeout), abandoned (the client left), protocol (anything else).", "cause"),
		hops: f.histogramVec("hop_seconds",
			"Events that asked for hop stamps (a \"hops\" object in an argument), timed by hop: client_to_replica (the client's send time \"t\" to the handler), "+
				"replica (the handler to the answer handed over), redis (handed over by one replica to read from Redis by another).",
			prometheus.ExponentialBucketsRange(0.00005, 60, 24), "hop"),

		handshakeHist: protocol.NewHistogram(),
		hopHist:       map[string]*hdrhistogram.Histogram{},
	}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help: "Always 1; the labels say which build and variant this is.",
	}, []string{"version", "goversion", "variant"})
	buildInfo.WithLabelValues(version(), runtime.Version(), variant).Set(1)
	reg.MustRegister(buildInfo)
	// On reg alone: Snapshot reads the listener's figures itself, once.
	reg.MustRegister(newListenQueueCollector(m, f.labels))
	return m
}

// EnableBroadcast registers the series only a broadcast target records:
// broadcast_fanout_seconds and broadcast_dropped_total. The broadcast hub
// calls it when it is built, before it serves, so they read 0 from the
// start; calling it again does nothing. Fanout and Dropped record nothing
// before it.
func (m *Metrics) EnableBroadcast() {
	if m == nil {
		return
	}
	m.broadcastOnce.Do(func() {
		m.fanout = m.f.histogram("broadcast_fanout_seconds", "Time to hand one broadcast to every client's send queue.",
			prometheus.ExponentialBucketsRange(0.00001, 10, 24))
		m.dropped = m.f.counter("broadcast_dropped_total", "Broadcast messages dropped for slow clients.")
	})
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// factory registers collectors with the namespace and constant labels.
type factory struct {
	regs   []prometheus.Registerer
	labels prometheus.Labels
}

func (f factory) register(c prometheus.Collector) {
	for _, reg := range f.regs {
		reg.MustRegister(c)
	}
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: f.labels})
	f.register(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: f.labels})
	f.register(g)
	return g
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: f.labels}, labels)
	f.register(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: f.labels, Buckets: buckets})
	f.register(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: f.labels, Buckets: buckets}, labels)
	f.register(h)
	return h
}

// Variant is the variant the metrics are labelled with.
func (m *Metrics) Variant() string {
	if m == nil {
		return ""
	}
	return m.variant
}

// Opened records a new connection.
func (m *Metrics) Opened() {
	if m == nil {
		return
	}
	m.connectionsTotal.Inc()
	m.connectionsActive.Inc()
	m.storm.opened()
}

// Closed records a connection that ended, with its close code or reason.
// The disconnect is counted before the connection leaves
// connections_active: a client that waits for connections_active to fall
// and then reads /stats must find the disconnect (see Snapshot). A caller
// that records more of the connection's end (a handshake's result) records
// it before calling Closed, for the same reason.
func (m *Metrics) Closed(reason string) {
	if m == nil {
		return
	}
	m.disconnects.WithLabelValues(reason).Inc()
	m.connectionsActive.Dec()
}

// Handshake records a handshake's result; d counts only for ResultOK.
func (m *Metrics) Handshake(result, transport string, d time.Duration) {
	if m == nil {
		return
	}
	m.handshakes.WithLabelValues(result, transport).Inc()
	if result != protocol.ResultOK {
		return
	}
	m.handshakeDuration.WithLabelValues(transport).Observe(d.Seconds())
	us := max(d.Microseconds(), 1)
	m.mu.Lock()
	_ = m.handshakeHist.RecordValue(us)
	m.mu.Unlock()
}

// Received records msgs messages and bytes payload bytes from clients.
// A target that counts bytes at another level than messages (Socket.IO:
// events, and Engine.IO packets' bytes) records each with the other 0; a
// target that adds up a batch first records the batch in one call.
func (m *Metrics) Received(msgs, bytes int) {
	if m == nil {
		return
	}
	// Zero is skipped rather than added: these are the hottest counters,
	// and an Add is an atomic operation on a shared cache line.
	if msgs != 0 {
		m.messagesReceived.Add(float64(msgs))
	}
	if bytes != 0 {
		m.receivedBytes.Add(float64(bytes))
	}
}

// Sent records msgs messages and bytes payload bytes to clients; see
// Received.
func (m *Metrics) Sent(msgs, bytes int) {
	if m == nil {
		return
	}
	if msgs != 0 {
		m.messagesSent.Add(float64(msgs))
	}
	if bytes != 0 {
		m.sentBytes.Add(float64(bytes))
	}
}

// Hop records one hop of a stamped event (shared/hops).
func (m *Metrics) Hop(hop string, d time.Duration) {
	if m == nil {
		return
	}
	m.hops.WithLabelValues(hop).Observe(d.Seconds())
	m.mu.Lock()
	h := m.hopHist[hop]
	if h == nil {
		h = protocol.NewHistogram()
		m.hopHist[hop] = h
	}
	_ = h.RecordValue(max(d.Microseconds(), 1))
	m.mu.Unlock()
}

// Fanout records the time one broadcast took to reach every send queue
// (after EnableBroadcast).
func (m *Metrics) Fanout(d time.Duration) {
	if m != nil && m.fanout != nil {
		m.fanout.Observe(d.Seconds())
	}
}

// Dropped records n broadcast messages dropped for slow clients (after
// EnableBroadcast).
func (m *Metrics) Dropped(n int) {
	if m != nil && m.dropped != nil {
		m.dropped.Add(float64(n))
	}
}

// Invalid records a message answered with an error instead of acted on.
func (m *Metrics) Invalid(reason string) {
	if m != nil {
		m.invalid.WithLabelValues(reason).Inc()
	}
}

// Fault records one injected fault of the given kind.
func (m *Metrics) Fault(kind string) {
	if m != nil {
		m.faults.WithLabelValues(kind).Inc()
	}
}

// AcceptError records a connection refused because an accept failed.
func (m *Metrics) AcceptError(reason string) {
	if m != nil {
		m.acceptErrors.WithLabelValues(reason).Inc()
	}
}

// CapRefused records a handshake refused because -max-conns connections
// were held. The caller records the rejected handshake too: this says why.
func (m *Metrics) CapRefused() {
	if m != nil {
		m.capRefused.Inc()
	}
}

// Listeners and stages of Timeout.
const (
	ListenerTarget = "target"
	ListenerAdmin  = "admin"

	StageHeader = "header"
	StageBody   = "body"
	StageIdle   = "idle"
)

// Timeout records a connection the server closed because a time bound of
// the given stage passed on the given listener.
func (m *Metrics) Timeout(listener, stage string) {
	if m != nil {
		m.timeouts.WithLabelValues(listener, stage).Inc()
	}
}

// Refused records an HTTP request refused outside a handshake's count.
func (m *Metrics) Refused(reason string) {
	if m != nil {
		m.refused.WithLabelValues(reason).Inc()
	}
}

// Operations of RedisError.
const (
	RedisPublish   = "publish"
	RedisReceive   = "receive"
	RedisCount     = "count"
	RedisLease     = "lease"
	RedisHeartbeat = "heartbeat"
	RedisRequest   = "request"
)

// RedisError records a Redis operation that failed.
func (m *Metrics) RedisError(op string) {
	if m != nil {
		m.redisErrors.WithLabelValues(op).Inc()
	}
}

// Directions and results of Cluster.
const (
	ClusterOut    = "out"
	ClusterIn     = "in"
	ClusterOK     = "ok"
	ClusterFailed = "failed"
	// ClusterExpired is a message that arrived after the bound its
	// sender stamped on it: dropped, not delivered late.
	ClusterExpired = "expired"
)

// Cluster records n messages between replicas.
func (m *Metrics) Cluster(direction, result string, n int) {
	if m != nil && n != 0 {
		m.cluster.WithLabelValues(direction, result).Add(float64(n))
	}
}

// Reasons of ClusterPartial.
const (
	PartialUnpublished = "unpublished"
	PartialMissed      = "missed"
	PartialTimeout     = "timeout"
	PartialOverflow    = "overflow"
)

// ClusterPartial records a broadcast whose listenerCount is not the whole
// cluster's.
func (m *Metrics) ClusterPartial(reason string) {
	if m != nil {
		m.clusterPartial.WithLabelValues(reason).Inc()
	}
}

// Clients of LoopHold.
const (
	HoldPresent = "present"
	HoldGone    = "gone"
)

// LoopHold records a connect handler that froze the blocking target's
// loop; client says whether its client was still there.
func (m *Metrics) LoopHold(client string) {
	if m != nil {
		m.loopHolds.WithLabelValues(client).Inc()
	}
}

// SubprotocolNone is the Subprotocol of a connection whose client offered
// subprotocols, none of them served.
const SubprotocolNone = "none"

// Subprotocol records a WebSocket connection opened with the subprotocol
// the server answered with (SubprotocolNone: it answered with none). The
// label's values are bounded by -subprotocols.
func (m *Metrics) Subprotocol(name string) {
	if m != nil {
		m.subprotocols.WithLabelValues(name).Inc()
	}
}

// Control records an order carried out from the admin listener.
func (m *Metrics) Control(action string) {
	if m != nil {
		m.controls.WithLabelValues(action).Inc()
	}
}

// Recovery records a result of connection state recovery.
func (m *Metrics) Recovery(result string) {
	if m != nil {
		m.recoveries.WithLabelValues(result).Inc()
	}
}

// WatchStorm starts the report of how the clients come back after a drop
// that begins now; it replaces the report of an earlier drop.
func (m *Metrics) WatchStorm() {
	if m != nil {
		m.storm.watch(time.Now())
	}
}

// StormDropped records how many clients the drop being watched closed.
func (m *Metrics) StormDropped(n int) {
	if m != nil {
		m.storm.setDropped(n)
	}
}

// NamespaceConnect records a namespace CONNECT acknowledged.
func (m *Metrics) NamespaceConnect(namespace string) {
	if m != nil {
		m.namespaces.WithLabelValues(namespace).Inc()
	}
}

// AdminUISession records that a session counted by Opened is the
// Socket.IO Admin UI's (its first CONNECT named /admin): it leaves
// connections_active, and its handshake and close are not recorded
// (the caller records neither).
func (m *Metrics) AdminUISession(transport string) {
	if m != nil {
		m.adminUISessions.WithLabelValues(transport).Inc()
		m.connectionsActive.Dec()
	}
}

// Reasons of AdminUIDropped.
const (
	AdminUIQueueFull  = "queue_full"
	AdminUISlowReader = "slow_reader"
)

// AdminUIDropped records n notifications for the Admin UI not sent.
func (m *Metrics) AdminUIDropped(reason string, n int) {
	if m != nil && n > 0 {
		m.adminUIDropped.WithLabelValues(reason).Add(float64(n))
	}
}

// TLSFailure records a failed TLS handshake by cause.
func (m *Metrics) TLSFailure(cause string) {
	if m != nil {
		m.tlsFailures.WithLabelValues(cause).Inc()
	}
}

// Kinds of Interop.
const InteropChunkedPost = "chunked_post"

// Interop records a request that a known server mishandles.
func (m *Metrics) Interop(kind string) {
	if m != nil {
		m.interop.WithLabelValues(kind).Inc()
	}
}

// Package protocol holds the wire formats that the targets and the load
// clients share: the /stats document here, the broadcast messages elsewhere.
package protocol

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Handshake results, the values of the result label.
const (
	ResultOK        = "ok"
	ResultRejected  = "rejected"
	ResultFailed    = "failed"
	ResultAbandoned = "abandoned"
)

// Stats is the JSON document served at /stats. Every count is cumulative
// since the process started, so that a snapshot taken before a run can be
// subtracted from one taken after it (see Diff).
type Stats struct {
	Variant       string  `json:"variant"`
	UptimeSeconds float64 `json:"uptime_seconds"`

	ConnectionsActive int64  `json:"connections_active"`
	ConnectionsTotal  uint64 `json:"connections_total"`

	// Handshakes counts by result (ok, rejected, failed, abandoned);
	// HandshakesByTransport splits the same counts by transport.
	Handshakes            map[string]uint64            `json:"handshakes"`
	HandshakesByTransport map[string]map[string]uint64 `json:"handshakes_by_transport"`
	// HandshakeLatency summarises the completed (ok) handshakes, measured on
	// the server from the first request to the moment its side was done.
	HandshakeLatency Latency `json:"handshake_latency"`
	// HandshakeHistogram is the same distribution as non-empty buckets, so
	// that the percentiles of the handshakes between two snapshots can be
	// computed (Diff does).
	HandshakeHistogram []Bucket `json:"handshake_histogram"`

	MessagesReceived uint64 `json:"messages_received"`
	MessagesSent     uint64 `json:"messages_sent"`
	BytesReceived    uint64 `json:"bytes_received"`
	BytesSent        uint64 `json:"bytes_sent"`

	Disconnects      map[string]uint64 `json:"disconnects"`
	BroadcastDropped uint64            `json:"broadcast_dropped"`
	// InvalidMessages counts messages answered with an error, by reason.
	InvalidMessages map[string]uint64 `json:"invalid_messages"`
	Faults          map[string]uint64 `json:"faults"`
	// AcceptErrors counts connections refused because accepting them
	// failed, by reason (EMFILE, ...).
	AcceptErrors map[string]uint64 `json:"accept_errors"`
	// MaxConnsRefused counts the handshakes refused with 503 because
	// -max-conns connections were held (each is in Handshakes as rejected
	// too).
	MaxConnsRefused uint64 `json:"max_conns_refused"`
	// Timeouts counts connections closed for a client too slow or too
	// quiet, by listener (target, admin), then stage (header, body, idle).
	Timeouts map[string]map[string]uint64 `json:"timeouts"`
	// RefusedRequests counts HTTP requests refused outside a handshake's
	// count, by reason (unknown_sid: a request for an Engine.IO session
	// this replica does not hold).
	RefusedRequests map[string]uint64 `json:"refused_requests"`
	// RedisErrors counts failed Redis operations (-redis), by op;
	// Cluster counts messages between replicas by direction (out, in),
	// then result (ok, failed).
	RedisErrors map[string]uint64            `json:"redis_errors"`
	Cluster     map[string]map[string]uint64 `json:"cluster"`
	// ClusterPartial counts broadcasts whose listenerCount left out a
	// replica, by reason (unpublished, missed, timeout, overflow).
	ClusterPartial map[string]uint64 `json:"cluster_partial_results"`
	// LoopHolds counts the blocking variant's connect handlers that froze
	// its loop, by whether their client was still there (present, gone).
	LoopHolds map[string]uint64 `json:"loop_holds"`
	// InteropRequests counts requests this target served that a known
	// server mishandles, by kind (chunked_post: a polling POST without
	// Content-Length, whose packets python-engineio 4 drops).
	InteropRequests map[string]uint64 `json:"interop_requests"`
	// Subprotocols counts WebSocket connections opened with a
	// subprotocol, by the one the server answered with (-subprotocols;
	// none: the client offered some, none of them served).
	Subprotocols map[string]uint64 `json:"subprotocols,omitempty"`
	// TLSFailures counts failed TLS handshakes by cause (no_certificate,
	// unknown_authority, expired, bad_certificate, timeout, abandoned,
	// protocol).
	TLSFailures map[string]uint64 `json:"tls_failures,omitempty"`
	// Namespaces counts Socket.IO namespace CONNECTs acknowledged, by
	// namespace.
	Namespaces map[string]uint64 `json:"namespaces,omitempty"`
	// Controls counts the admin listener's run-time orders (/control/...),
	// by action (drop, push).
	Controls map[string]uint64 `json:"controls,omitempty"`
	// Recoveries counts Socket.IO connection state recovery (-recovery) by
	// result: recovered, missed (a client came back with a private id and
	// was not recovered: its socket or its offset expired or was let go),
	// evicted_session and evicted_packet (let go before the window ended,
	// over the bounds the native engine keeps).
	Recoveries map[string]uint64 `json:"recoveries,omitempty"`
	// ListenQueue is the kernel's side of the target's listener: the
	// connects turned away at listen queues and its accept queue now; nil
	// where it is not read (a target started other than by the binary).
	ListenQueue *ListenQueue `json:"listen_queue,omitempty"`
	// Storm is how the clients came back after the last drop ordered from
	// the admin listener; nil before any.
	Storm *Storm `json:"storm,omitempty"`

	// Hops times the events that asked for hop stamps (shared/hops), by
	// hop (client_to_replica, replica, redis): each as a summary and as
	// non-empty buckets, so that a diff gives the hops of its own window.
	Hops map[string]Distribution `json:"hops,omitempty"`
	// SchedLatency is how long the process's goroutines waited to run
	// once ready (the Go runtime's /sched/latencies:seconds): high, and
	// the process itself held what it serves, short of CPU or behind its
	// own goroutines.
	SchedLatency Distribution `json:"sched_latency"`

	// CPUSeconds is the process's user+system CPU time; ResidentBytes its
	// resident memory. A diff gives the CPU the run cost the server.
	CPUSeconds    float64 `json:"cpu_seconds"`
	ResidentBytes uint64  `json:"resident_bytes"`
	// Goroutines is the process's goroutines now (go_goroutines on
	// /metrics): one or two per connection on the net/http variants, so a
	// count that keeps rising after the clients left is a leak.
	Goroutines int `json:"goroutines"`
}

// Distribution is a latency's summary and its non-empty buckets, so that
// the distribution between two snapshots can be computed (DiffBuckets).
type Distribution struct {
	Latency   Latency  `json:"latency"`
	Histogram []Bucket `json:"histogram"`
}

// Latency is a set of percentiles, in seconds.
type Latency struct {
	Count uint64  `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Bucket is one non-empty bucket of a latency histogram: Count values whose
// upper bound is UpToMicros.
type Bucket struct {
	UpToMicros int64 `json:"le_us"`
	Count      int64 `json:"n"`
}

// Histogram bounds shared by the server and the clients: 1 µs to 10 min,
// two significant figures (1% resolution).
const (
	histLowest  = 1
	histHighest = int64(10 * time.Minute / time.Microsecond)
	histSigFigs = 2
)

// NewHistogram returns an HdrHistogram in microseconds with the bounds that
// Buckets and LatencyOf expect. It is not safe for concurrent use.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histSigFigs)
}

// Buckets lists the non-empty buckets of h.
func Buckets(h *hdrhistogram.Histogram) []Bucket {
	out := []Bucket{}
	for _, bar := range h.Distribution() {
		if bar.Count > 0 {
			out = append(out, Bucket{UpToMicros: bar.To, Count: bar.Count})
		}
	}
	return out
}

// LatencyOf summarises h (microseconds) in seconds.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	sec := func(us int64) float64 { return float64(us) / 1e6 }
	return Latency{
		Count: uint64(h.TotalCount()),
		P50:   sec(h.ValueAtPercentile(50)),
		P90:   sec(h.ValueAtPercentile(90)),
		P95:   sec(h.ValueAtPercentile(95)),
		P99:   sec(h.ValueAtPercentile(99)),
		Max:   sec(h.Max()),
	}
}

// HistogramOf rebuilds a histogram from buckets; a negative count (which a
// diff of snapshots from two different processes could produce) is skipped.
func HistogramOf(buckets []Bucket) *hdrhistogram.Histogram {
	h := NewHistogram()
	for _, b := range buckets {
		if b.Count > 0 {
			_ = h.RecordValues(b.UpToMicros, b.Count)
		}
	}
	return h
}

// Diff returns what happened between two snapshots of the same process:
// counts are after minus before, handshake percentiles are those of the
// handshakes completed in between, and the gauges and identity come from
// after.
func Diff(before, after Stats) Stats {
	d := after
	d.ConnectionsTotal = after.ConnectionsTotal - before.ConnectionsTotal
	d.Handshakes = diffMap(before.Handshakes, after.Handshakes)
	d.HandshakesByTransport = map[string]map[string]uint64{}
	for transport, counts := range after.HandshakesByTransport {
		d.HandshakesByTransport[transport] = diffMap(before.HandshakesByTransport[transport], counts)
	}
	d.HandshakeHistogram = DiffBuckets(before.HandshakeHistogram, after.HandshakeHistogram)
	d.HandshakeLatency = LatencyOf(HistogramOf(d.HandshakeHistogram))
	if after.Hops != nil {
		d.Hops = map[string]Distribution{}
		for hop, h := range after.Hops {
			buckets := DiffBuckets(before.Hops[hop].Histogram, h.Histogram)
			if len(buckets) > 0 {
				d.Hops[hop] = DistributionOf(buckets)
			}
		}
	}
	d.MessagesReceived = after.MessagesReceived - before.MessagesReceived
	d.MessagesSent = after.MessagesSent - before.MessagesSent
	d.BytesReceived = after.BytesReceived - before.BytesReceived
	d.BytesSent = after.BytesSent - before.BytesSent
	d.Disconnects = diffMap(before.Disconnects, after.Disconnects)
	d.BroadcastDropped = after.BroadcastDropped - before.BroadcastDropped
	d.InvalidMessages = diffMap(before.InvalidMessages, after.InvalidMessages)
	d.Faults = diffMap(before.Faults, after.Faults)
	d.AcceptErrors = diffMap(before.AcceptErrors, after.AcceptErrors)
	d.MaxConnsRefused = after.MaxConnsRefused - before.MaxConnsRefused
	d.Timeouts = diffNested(before.Timeouts, after.Timeouts)
	d.RefusedRequests = diffMap(before.RefusedRequests, after.RefusedRequests)
	d.RedisErrors = diffMap(before.RedisErrors, after.RedisErrors)
	d.Cluster = diffNested(before.Cluster, after.Cluster)
	d.ClusterPartial = diffMap(before.ClusterPartial, after.ClusterPartial)
	d.LoopHolds = diffMap(before.LoopHolds, after.LoopHolds)
	d.InteropRequests = diffMap(before.InteropRequests, after.InteropRequests)
	d.Subprotocols = diffMap(before.Subprotocols, after.Subprotocols)
	d.TLSFailures = diffMap(before.TLSFailures, after.TLSFailures)
	d.Namespaces = diffMap(before.Namespaces, after.Namespaces)
	d.Controls = diffMap(before.Controls, after.Controls)
	d.Recoveries = diffMap(before.Recoveries, after.Recoveries)
	if after.ListenQueue != nil && before.ListenQueue != nil {
		q := *after.ListenQueue
		q.Overflows -= min(before.ListenQueue.Overflows, q.Overflows)
		q.Drops -= min(before.ListenQueue.Drops, q.Drops)
		d.ListenQueue = &q
	}
	d.CPUSeconds = after.CPUSeconds - before.CPUSeconds
	d.SchedLatency = DistributionOf(DiffBuckets(before.SchedLatency.Histogram, after.SchedLatency.Histogram))
	return d
}

// DistributionOf is the distribution of buckets.
func DistributionOf(buckets []Bucket) Distribution {
	return Distribution{Latency: LatencyOf(HistogramOf(buckets)), Histogram: buckets}
}

// DiffBuckets is the buckets of after less those of before.
func DiffBuckets(before, after []Bucket) []Bucket {
	prev := map[int64]int64{}
	for _, b := range before {
		prev[b.UpToMicros] = b.Count
	}
	out := []Bucket{}
	for _, b := range after {
		if n := b.Count - prev[b.UpToMicros]; n > 0 {
			out = append(out, Bucket{UpToMicros: b.UpToMicros, Count: n})
		}
	}
	return out
}

// diffMap subtracts before from after and leaves out the keys that did not
// change, so that a diff shows only what the run did.
func diffMap(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			out[k] = n
		}
	}
	return out
}

// diffNested is diffMap one level down; inner maps left empty are left out.
func diffNested(before, after map[string]map[string]uint64) map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	for k, counts := range after {
		if diff := diffMap(before[k], counts); len(diff) > 0 {
			out[k] = diff
		}
	}
	return out
}

// DecodeStats reads one /stats document and rejects anything else, so that a
// wrong admin address gives a clear error rather than a page of zeros.
func DecodeStats(r io.Reader) (Stats, error) {
	var s Stats
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	if err := dec.Decode(&s); err != nil {
		return Stats{}, fmt.Errorf("not a knowngood /stats document: %w", err)
	}
	if s.Variant == "" {
		return Stats{}, fmt.Errorf("not a knowngood /stats document: no variant")
	}
	return s, nil
}

// ListenQueue is what the kernel did with the connects to a target's
// listener.
type ListenQueue struct {
	// Overflows and Drops are the kernel's TcpExt ListenOverflows (a
	// handshake completed when an accept queue was full) and ListenDrops
	// (a connect dropped at a listener for any reason, the overflows
	// among them) since the target started. They count for the target's
	// whole network namespace, every listener in it, not for its socket
	// alone: on a machine where other servers are refusing connects too,
	// they include theirs.
	Overflows uint64 `json:"overflows"`
	Drops     uint64 `json:"drops"`
	// Queued is how many handshakes wait in the target's own accept queue
	// now, and Limit the most it holds (the backlog in effect; Linux
	// takes one more); -1 where they cannot be read (not Linux).
	Queued int `json:"queued"`
	Limit  int `json:"limit"`
}

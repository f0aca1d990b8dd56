package handshake

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/loadgen/internal/plural"
	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/sidebyside"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Report is the result of a run: the table and the JSON object carry the
// same figures. Its JSON field names match those of the script clients
// (scripts/clients/sio-connect.mjs, sio_connect.py) where they overlap.
type Report struct {
	scenario.Heading
	Transport string `json:"transport"`
	Namespace string `json:"namespace"`
	Deadline  string `json:"deadline"`

	Attempts  int `json:"attempts"`
	Connected int `json:"connected"`
	Echoed    int `json:"echoed"`
	Failed    int `json:"failed"` // Attempts - Connected
	// Errors groups the failed connections by their first error; the
	// counts add up to Failed.
	Errors map[string]int `json:"errors"`
	// EchoErrors groups the echoes that got no matching ack.
	EchoErrors map[string]int `json:"echo_errors,omitempty"`

	// Handshake latency, from a connection's start to its namespace
	// CONNECT; null when none connected.
	P50ms *float64 `json:"p50_ms"`
	P95ms *float64 `json:"p95_ms"`
	P99ms *float64 `json:"p99_ms"`
	MaxMs *float64 `json:"max_ms"`
	// TotalMs is the connect phase: from the start of all connections to
	// the moment the last one connected, failed, or reached the deadline.
	TotalMs             float64 `json:"total_ms"`
	HandshakesPerSecond float64 `json:"handshakes_per_second"` // Connected / TotalMs
	// ClientCPUSeconds is this process's user+system CPU time over the
	// connect, echo and close phases (getrusage).
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
	// Samples: every second of the connect phase, from the start of all
	// connections: the handshakes completed in it (count), the connections
	// that failed in it (errors), the latency of those completed.
	Samples []timeline.Sample `json:"samples"`
	// Distribution is the handshake latency histogram, on a 1-2-5 scale.
	Distribution []protocol.Bucket `json:"latency_distribution"`

	// A sharded run (-shard) also carries, for 'loadgen merge', the
	// handshake latency as the HdrHistogram's non-empty buckets (merging
	// them is exact, unlike merging percentiles), and the counts the
	// verdicts read (Shard).
	LatencyHistogram []protocol.Bucket `json:"latency_histogram,omitempty"`
	// Server is the server's own view of the run (its /stats after minus
	// before).
	scenario.Judgment[ServerView]
}

// ServerView is what the server reported about the run.
type ServerView struct {
	Admin   string `json:"admin"`
	Variant string `json:"variant"`
	// Handshakes by result: ok, rejected, failed, abandoned.
	Handshakes map[string]uint64 `json:"handshakes"`
	// Server-side handshake latency of the run's completed handshakes.
	P50ms *float64 `json:"p50_ms"`
	P99ms *float64 `json:"p99_ms"`
	// CPUSeconds is the server's CPU time over the run; null when the
	// server does not report cpu_seconds.
	CPUSeconds *float64 `json:"cpu_seconds"`
	// ResidentBytes is the server's resident memory after the run, when
	// reported.
	ResidentBytes     *float64 `json:"resident_bytes"`
	ConnectionsActive int64    `json:"connections_active"`
	// Events received and sent (acks included), and disconnects by
	// reason, over the run.
	MessagesReceived uint64            `json:"messages_received"`
	MessagesSent     uint64            `json:"messages_sent"`
	Disconnects      map[string]uint64 `json:"disconnects"`
	// Faults injected (-fault-*) and accepts failed over the run, by kind:
	// the server's account of failures the client saw.
	Faults       map[string]uint64 `json:"faults,omitempty"`
	AcceptErrors map[string]uint64 `json:"accept_errors,omitempty"`
	// Replicas: each replica's part of the run (-admin with several, or
	// -shard); the figures above are their sum, and the percentiles
	// those of every replica's handshakes together.
	Replicas []replicas.Replica `json:"replicas,omitempty"`
}

// WriteCSV writes the samples, one row a second.
func (r *Report) WriteCSV(w io.Writer) error { return timeline.WriteCSV(w, r.Samples) }

// HTMLRun is the run for an HTML report: one point of success rate against
// concurrency, and the client's counts against the server's.
func (r *Report) HTMLRun() (htmlreport.Run, error) {
	run := htmlreport.Run{
		Name:        fmt.Sprintf("%d connections at once to %s (%s)", r.Attempts, r.URL, r.Transport),
		Concurrency: r.Attempts, Attempts: r.Attempts, Succeeded: r.Connected,
		Samples: r.Samples, Unit: "handshakes", Distribution: r.Distribution,
	}
	var okServer, failedServer *float64
	if s := r.Server; s != nil {
		ok := float64(s.Handshakes[protocol.ResultOK])
		failed := float64(s.Handshakes[protocol.ResultRejected] + s.Handshakes[protocol.ResultFailed] + s.Handshakes[protocol.ResultAbandoned])
		okServer, failedServer = &ok, &failed
	}
	run.Counts = []htmlreport.Count{
		{Name: "connected (server: ok)", Client: float64(r.Connected), Server: okServer},
		{Name: "failed (server: rejected, failed, abandoned)", Client: float64(r.Failed), Server: failedServer},
	}
	return run.WithReport(r.WriteTable)
}

// WriteTable writes the report as a table: the client's figures, and the
// server's next to them when there are any.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "handshake: %s at once to %s, namespace %s, transport %s, deadline %s (%s %s)\n",
		plural.Of(r.Attempts, "connection"), r.URL, r.Namespace, r.Transport, r.Deadline, r.Client, r.Version)
	s := r.Server
	t := sidebyside.New(w, s, func(s *ServerView) string { return sidebyside.Header(s.Variant, s.Admin, 0) })
	t.Row("attempts", strconv.Itoa(r.Attempts), "")
	t.Row("connected", fmt.Sprintf("%d (%s)", r.Connected, percent(r.Connected, r.Attempts)),
		t.Server(func(s *ServerView) string { return fmt.Sprintf("ok %d", s.Handshakes[protocol.ResultOK]) }))
	t.Row("failed", strconv.Itoa(r.Failed),
		t.Server(func(s *ServerView) string {
			return fmt.Sprintf("rejected %d, failed %d, abandoned %d",
				s.Handshakes[protocol.ResultRejected], s.Handshakes[protocol.ResultFailed], s.Handshakes[protocol.ResultAbandoned])
		}))
	t.Row("echoed", strconv.Itoa(r.Echoed),
		t.Server(func(s *ServerView) string {
			return fmt.Sprintf("%d events received, %d sent", s.MessagesReceived, s.MessagesSent)
		}))
	t.Row("p50", msString(r.P50ms), t.Server(func(s *ServerView) string { return msString(s.P50ms) }))
	t.Row("p95", msString(r.P95ms), "")
	t.Row("p99", msString(r.P99ms), t.Server(func(s *ServerView) string { return msString(s.P99ms) }))
	t.Row("max", msString(r.MaxMs), "")
	t.Row("total", time.Duration(r.TotalMs*float64(time.Millisecond)).Round(time.Millisecond).String(), "")
	t.Row("handshakes/s", strconv.FormatFloat(r.HandshakesPerSecond, 'f', 0, 64), "")
	t.Row("cpu seconds", strconv.FormatFloat(r.ClientCPUSeconds, 'f', 2, 64),
		t.Server(func(s *ServerView) string { return floatString(s.CPUSeconds, 2) }))
	if s != nil && s.ResidentBytes != nil {
		t.Row("resident MiB", "", strconv.FormatFloat(*s.ResidentBytes/(1<<20), 'f', 1, 64))
	}
	if s != nil {
		t.Row("disconnects", fmt.Sprintf("%d closed by the client", r.Connected), disconnects(s.Disconnects))
	}
	if s != nil && len(s.Faults) > 0 {
		t.Row("injected faults", "", tally.Line(s.Faults))
	}
	if s != nil && len(s.AcceptErrors) > 0 {
		t.Row("accept errors", "", tally.Line(s.AcceptErrors))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if s != nil {
		replicas.WriteTable(w, s.Replicas)
	}
	writeCounts(w, "errors", r.Errors)
	writeCounts(w, "echo errors", r.EchoErrors)
	verdict.Write(w, r.Verdicts)
	return nil
}

// writeCounts lists counts by message, the largest first.
func writeCounts(w io.Writer, title string, counts map[string]int) {
	if len(counts) == 0 {
		return
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	fmt.Fprintf(w, "%s:\n", title)
	for _, k := range keys {
		fmt.Fprintf(w, "  %6d  %s\n", counts[k], k)
	}
}

// disconnects says the server's disconnects by reason: "transport
// close 2, ping timeout 1", or "none".
func disconnects(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	return tally.Line(m)
}

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
}

func msString(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64) + "ms"
}

func floatString(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func msPtr(v float64) *float64 {
	v = round3(v)
	return &v
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

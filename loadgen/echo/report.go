package echo

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/loadgen/internal/plural"
	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/sidebyside"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Report is the result of a run: the table and the JSON object carry the
// same figures. Every figure but Sent and Errors is about the window: the
// messages sent (due, in rate mode) from its start to its end, and the CPU
// time of both sides over the same interval.
type Report struct {
	scenario.Heading
	Mode     string `json:"mode"`
	Conns    int    `json:"connections"`
	Size     int    `json:"size"`
	Text     bool   `json:"text"`               // -text: WebSocket text messages, not binary
	Inflight int    `json:"inflight,omitempty"` // pipelined
	Rate     int    `json:"rate,omitempty"`     // rate: the target, msg/s
	Duration string `json:"duration"`
	Warmup   string `json:"warmup"`

	Connected int `json:"connected"`
	// Messages is the number of matching echoes of the messages sent in
	// the window, however late they came.
	Messages          int64   `json:"messages"`
	WindowSeconds     float64 `json:"window_seconds"` // shorter than Duration when interrupted
	MessagesPerSecond float64 `json:"messages_per_second"`
	// Interrupted: the run was stopped before the end of the window; the
	// messages awaiting their echo then are not counted as lost.
	Interrupted bool `json:"interrupted"`
	// Sent counts every message written, warmup and window.
	Sent int64 `json:"sent"`
	// BehindSchedule (rate mode) counts the messages due before the end
	// that were never sent: the writes could not keep up.
	BehindSchedule int64 `json:"behind_schedule"`

	// Latency of the window's messages, from send (due time in rate mode)
	// to the echo; null when there is none.
	P50ms  *float64 `json:"p50_ms"`
	P90ms  *float64 `json:"p90_ms"`
	P99ms  *float64 `json:"p99_ms"`
	P999ms *float64 `json:"p99_9_ms"`
	MaxMs  *float64 `json:"max_ms"`
	// Rate mode: how late the window's messages were written after their
	// due time (timer wake-ups, blocked writes). It is part of the latency
	// above: when it is large, the client is the bottleneck. Go's timers
	// wake up to about 1 ms late while the process is otherwise idle, so
	// at low rates it is most of the latency.
	SendLateP50ms *float64 `json:"send_late_p50_ms,omitempty"`
	SendLateP99ms *float64 `json:"send_late_p99_ms,omitempty"`
	SendLateMaxMs *float64 `json:"send_late_max_ms,omitempty"`

	// Samples: every second of the window, by the second the messages
	// were sent (due) in: how many of them were echoed back (count, which
	// adds up to Messages), their latency, and the errors (connections
	// ended, mismatched echoes) that came in that second.
	Samples []timeline.Sample `json:"samples"`
	// Distribution is the latency histogram of the window, on a 1-2-5
	// scale.
	Distribution []protocol.Bucket `json:"latency_distribution"`

	// ClientCPUSeconds is this process's user+system CPU time over the
	// window (getrusage).
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
	// Errors by kind: dial, write and read count connections, mismatch
	// and lost count messages.
	Errors map[string]tally.Count `json:"errors"`

	// A sharded run (-shard) also carries, for 'loadgen merge', the
	// window's latency and send lateness as the HdrHistogram's non-empty
	// buckets (merging them is exact, unlike merging percentiles), and
	// the counts the verdicts read (Shard).
	LatencyHistogram  []protocol.Bucket `json:"latency_histogram,omitempty"`
	SendLateHistogram []protocol.Bucket `json:"send_late_histogram,omitempty"`
	// Server is the target's view of the window: its /stats at the start
	// and at the end, and its CPU from /proc with -pid.
	scenario.Judgment[ServerView]
}

// ServerView is what the target reported about the window.
type ServerView struct {
	Admin   string `json:"admin,omitempty"`
	Variant string `json:"variant,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// CPUSeconds is the target's CPU time over the window, from /proc
	// when -pid is given, else from /stats; CPUSource says which.
	CPUSeconds *float64 `json:"cpu_seconds"`
	CPUSource  string   `json:"cpu_source,omitempty"`
	// The target's own counts over the window, from /stats (echo-tcp
	// counts reads, not messages).
	MessagesReceived  *uint64 `json:"messages_received"`
	MessagesSent      *uint64 `json:"messages_sent"`
	BytesReceived     *uint64 `json:"bytes_received"`
	BytesSent         *uint64 `json:"bytes_sent"`
	ConnectionsActive *int64  `json:"connections_active"`
	// Faults are the known-bad faults the target injected over the window
	// (-fault-*), by kind, and AcceptErrors its failed accepts: the
	// server's own account of failures the client saw.
	Faults       map[string]uint64 `json:"faults,omitempty"`
	AcceptErrors map[string]uint64 `json:"accept_errors,omitempty"`
	// Replicas: each replica's part of the window (-admin with several,
	// or -shard); the figures above are their sum.
	Replicas []replicas.Replica `json:"replicas,omitempty"`
}

func newReport(cfg Config) *Report {
	r := &Report{
		Heading: scenario.Heading{URL: cfg.URL}, Mode: cfg.Mode, Conns: cfg.Conns, Size: cfg.Size, Text: cfg.Text,
		Duration: cfg.Duration.String(), Warmup: cfg.Warmup.String(), Errors: map[string]tally.Count{},
	}
	u, _ := target.ParseURL(cfg.URL)
	r.Client, r.Version = target.Client(u, target.Gobwas)
	switch cfg.Mode {
	case Pipelined:
		r.Inflight = cfg.Inflight
	case Rate:
		r.Rate = cfg.Rate
	}
	return r
}

// setLatency fills in the percentiles of lat, and of late when it has any.
func (r *Report) setLatency(lat, late *hdrhistogram.Histogram) {
	ms := func(us int64) *float64 { v := float64(us) / 1000; return &v }
	r.Distribution = timeline.Distribution(lat)
	if lat.TotalCount() > 0 {
		r.P50ms, r.P90ms, r.P99ms = ms(lat.ValueAtPercentile(50)), ms(lat.ValueAtPercentile(90)), ms(lat.ValueAtPercentile(99))
		r.P999ms, r.MaxMs = ms(lat.ValueAtPercentile(99.9)), ms(lat.Max())
	}
	if late.TotalCount() > 0 {
		r.SendLateP50ms, r.SendLateP99ms, r.SendLateMaxMs = ms(late.ValueAtPercentile(50)), ms(late.ValueAtPercentile(99)), ms(late.Max())
	}
}

// serverView combines the two samples; the string says what failed.
func serverView(cfg Config, before, after sample) (*ServerView, string) {
	v := &ServerView{Admin: cfg.Admin, PID: cfg.PID}
	var problems []error
	if cfg.PID != 0 {
		if err := errors.Join(before.procErr, after.procErr); err != nil {
			problems = append(problems, fmt.Errorf("no CPU time of process %d: %w", cfg.PID, err))
		} else {
			cpu := *after.procCPU - *before.procCPU
			v.CPUSeconds, v.CPUSource = &cpu, "proc"
		}
	}
	statsOK := false
	before.server, after.server = scenario.Pair(before.server, after.server)
	if cfg.Admin != "" {
		if err := errors.Join(before.server.Failure(), after.server.Failure()); err != nil {
			problems = append(problems, fmt.Errorf("no /stats from %s: %w", cfg.Admin, err))
		} else {
			statsOK = true
			b, a := before.server.Stats, after.server.Stats
			d := protocol.Diff(b.Stats, a.Stats)
			v.Variant = a.Variant
			v.MessagesReceived, v.MessagesSent = &d.MessagesReceived, &d.MessagesSent
			v.BytesReceived, v.BytesSent = &d.BytesReceived, &d.BytesSent
			v.ConnectionsActive = &a.ConnectionsActive
			v.Faults, v.AcceptErrors = d.Faults, d.AcceptErrors
			v.Replicas = cfg.ReplicasOf(before.server, after.server)
			if cpu := scenario.CPU(before.server, after.server); v.CPUSeconds == nil && cpu != nil {
				v.CPUSeconds, v.CPUSource = cpu, "stats"
			}
		}
	}
	problem := ""
	if err := errors.Join(problems...); err != nil {
		problem = oneLine(err.Error())
	}
	if !statsOK && v.CPUSeconds == nil {
		return nil, problem
	}
	if !statsOK {
		v.Admin = ""
	}
	return v, problem
}

// WriteCSV writes the samples, one row a second.
func (r *Report) WriteCSV(w io.Writer) error { return timeline.WriteCSV(w, r.Samples) }

// HTMLRun is the run for an HTML report, with the messages the client had
// echoed against those the server says it echoed.
func (r *Report) HTMLRun() (htmlreport.Run, error) {
	run := htmlreport.Run{
		Name:    fmt.Sprintf("%d connections to %s, %d-byte %s, %s", r.Conns, r.URL, r.Size, r.messages(), r.Mode),
		Samples: r.Samples, Unit: "echoes", Distribution: r.Distribution,
	}
	var echoed *float64
	if s := r.Server; s != nil {
		echoed = htmlreport.FloatOf(s.MessagesSent)
	}
	run.Counts = []htmlreport.Count{{Name: "echoes received (server: messages sent)", Client: float64(r.Messages), Server: echoed}}
	return run.WithReport(r.WriteTable)
}

// WriteTable writes the report as a table: the client's figures, and the
// server's next to them when there are any.
func (r *Report) WriteTable(w io.Writer) error {
	how := r.Mode
	switch r.Mode {
	case Pipelined:
		how = fmt.Sprintf("pipelined (%d in flight per connection)", r.Inflight)
	case Rate:
		how = fmt.Sprintf("rate (%d msg/s in total, latency from each message's due time)", r.Rate)
	}
	fmt.Fprintf(w, "echo: %s to %s, %d-byte %s, %s, %s after a %s warmup (%s %s)\n",
		plural.Of(r.Conns, "connection"), r.URL, r.Size, r.messages(), how, r.Duration, r.Warmup, r.Client, r.Version)
	if r.Interrupted {
		fmt.Fprintf(w, "interrupted: the figures cover %.1fs of the window\n", r.WindowSeconds)
	}
	if len(r.Verdicts) > 0 {
		fmt.Fprintf(w, "the table counts the %s window only; the verdicts count the whole run (warmup, window and the last echoes)\n", r.Duration)
	}
	s := r.Server
	t := sidebyside.New(w, s, func(s *ServerView) string { return sidebyside.Header(s.Variant, s.Admin, s.PID) })
	t.Row("connected", fmt.Sprintf("%d of %d", r.Connected, r.Conns),
		t.Server(func(s *ServerView) string {
			if s.ConnectionsActive == nil {
				return ""
			}
			return fmt.Sprintf("%d active", *s.ConnectionsActive)
		}))
	t.Row("messages echoed", strconv.FormatInt(r.Messages, 10),
		t.Server(func(s *ServerView) string {
			if s.MessagesReceived == nil {
				return ""
			}
			return fmt.Sprintf("%d received, %d sent", *s.MessagesReceived, *s.MessagesSent)
		}))
	t.Row("msg/s", strconv.FormatFloat(r.MessagesPerSecond, 'f', 0, 64), "")
	if r.Mode == Rate {
		t.Row("behind schedule", strconv.FormatInt(r.BehindSchedule, 10), "")
		t.Row("sent late p50/p99/max", fmt.Sprintf("%s / %s / %s", msString(r.SendLateP50ms), msString(r.SendLateP99ms), msString(r.SendLateMaxMs)), "")
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"p50", r.P50ms}, {"p90", r.P90ms}, {"p99", r.P99ms}, {"p99.9", r.P999ms}, {"max", r.MaxMs}} {
		t.Row(p.name, msString(p.v), "")
	}
	t.Row("cpu seconds", strconv.FormatFloat(r.ClientCPUSeconds, 'f', 2, 64),
		t.Server(func(s *ServerView) string {
			if s.CPUSeconds == nil {
				return "-"
			}
			return fmt.Sprintf("%.2f (%s)", *s.CPUSeconds, s.CPUSource)
		}))
	if s != nil && len(s.Faults) > 0 {
		t.Row("injected faults", "", tally.Line(s.Faults))
	}
	if s != nil && len(s.AcceptErrors) > 0 {
		t.Row("accept errors", "", tally.Line(s.AcceptErrors))
	}
	if s != nil {
		t.Replicas(s.Replicas)
	}
	return t.Close(w, r.Errors, r.ServerError, r.Verdicts)
}

// messages names what was sent: WebSocket text or binary messages, or
// the bytes of a raw TCP stream.
func (r *Report) messages() string {
	switch {
	case r.Text:
		return "text messages"
	case strings.HasPrefix(r.URL, "ws"):
		return "binary messages"
	}
	return "messages"
}

func msString(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64) + "ms"
}

// oneLine keeps an error's text on one line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

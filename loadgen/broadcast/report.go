package broadcast

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

// Report is the result of a run; the table and the JSON object carry the
// same figures. Deliveries count one message reaching one connection.
type Report struct {
	scenario.Heading
	Mode        string `json:"mode"` // broadcast or push
	Subscribers int    `json:"subscribers"`
	Senders     int    `json:"senders"`
	Rate        int    `json:"rate,omitempty"`
	Duration    string `json:"duration"`

	Connected      int            `json:"connected"` // subscribers and senders that joined
	Failed         int            `json:"failed"`
	ConnectSeconds float64        `json:"connect_seconds"`
	Batches        []target.Batch `json:"batches"`
	Interrupted    bool           `json:"interrupted"`
	WindowSeconds  float64        `json:"window_seconds"`

	// Sent: broadcasts written in the window (broadcast mode); Pushes:
	// push seqs sent in the window (push mode), from the lowest to the
	// highest any connection received.
	Sent   uint64 `json:"sent"`
	Pushes uint64 `json:"pushes"`
	// Expected deliveries (every connection should get every message of
	// the window), Received (distinct), Lost, Duplicates.
	Expected   uint64 `json:"expected"`
	Received   uint64 `json:"received"`
	Lost       uint64 `json:"lost"`
	Duplicates uint64 `json:"duplicates"`
	// Latency from the send time in the message to its arrival, over every
	// delivery of the window (one histogram, not an average of averages).
	Latency *protocol.Latency `json:"latency"`
	// Distribution is the same latency's histogram, on a 1-2-5 scale.
	Distribution []protocol.Bucket `json:"latency_distribution"`
	// Samples: every second of the window, by the second the messages
	// were sent in: their deliveries (count), latency, and the
	// connections dropped in that second (errors).
	Samples []timeline.Sample `json:"samples"`
	// ResultRTT: broadcast to broadcastResult, at the sender.
	ResultRTT          *protocol.Latency `json:"result_rtt"`
	Results            int64             `json:"results"`
	ListenerCount      int64             `json:"listener_count"`      // what each result should say: everyone connected
	ListenerMismatches int64             `json:"listener_mismatches"` // results that said otherwise
	// OtherShards (-shard): deliveries of the other shards' broadcasts,
	// which this shard's members also get and leave to those shards.
	OtherShards int64 `json:"other_shards_deliveries,omitempty"`
	// PushesReceived (broadcast mode, against a target started with
	// -push-interval): the target's timed pushes that every member got
	// from the window's start until the close, in all. They are not
	// broadcast deliveries (Received), but the server counts them among
	// the messages it sent.
	PushesReceived uint64 `json:"pushes_received,omitempty"`

	ClientCPUSeconds float64                `json:"client_cpu_seconds"`
	Errors           map[string]tally.Count `json:"errors"`

	// A sharded run (-shard) also carries, for 'loadgen merge', the
	// latency and the result round trips as the HdrHistograms' non-empty
	// buckets (merging them is exact), and the counts the verdicts read
	// (Shard).
	LatencyHistogram   []protocol.Bucket `json:"latency_histogram,omitempty"`
	ResultRTTHistogram []protocol.Bucket `json:"result_rtt_histogram,omitempty"`
	scenario.Judgment[ServerView]
}

// ServerView is the target's /stats over the window.
type ServerView struct {
	Admin             string            `json:"admin"`
	Variant           string            `json:"variant"`
	CPUSeconds        *float64          `json:"cpu_seconds"`
	MessagesReceived  uint64            `json:"messages_received"`
	MessagesSent      uint64            `json:"messages_sent"`
	Dropped           uint64            `json:"broadcast_dropped"`
	Invalid           map[string]uint64 `json:"invalid_messages"`
	Disconnects       map[string]uint64 `json:"disconnects"`
	ConnectionsActive int64             `json:"connections_active"`
	// ResidentBytes: the target's RSS at the end of the window.
	ResidentBytes *float64 `json:"resident_bytes"`
	// Replicas: each replica's part (-admin with several, or -shard);
	// the figures above are their sum.
	Replicas []replicas.Replica `json:"replicas,omitempty"`
}

func newReport(cfg Config) *Report {
	r := &Report{Heading: scenario.Heading{URL: cfg.URL}, Mode: "broadcast", Subscribers: cfg.Subscribers, Senders: cfg.Senders, Rate: cfg.Rate,
		Duration: cfg.Duration.String(), Batches: []target.Batch{}, Errors: map[string]tally.Count{}}
	if cfg.Push {
		r.Mode = "push"
	}
	u, _ := target.ParseURL(cfg.URL)
	r.Client, r.Version = target.Client(u, target.Gorilla)
	return r
}

// serverView is the difference of two snapshots; the string says what
// failed.
func serverView(cfg Config, before, after *scenario.Snapshot) (*ServerView, string) {
	if before == nil || after == nil {
		return nil, ""
	}
	parts := cfg.ReplicasOf(before, after)
	before, after = scenario.Pair(before, after)
	if err := errors.Join(before.Err, after.Err); err != nil {
		return nil, strings.ReplaceAll(fmt.Sprintf("no /stats from %s: %v", cfg.Admin, err), "\n", "; ")
	}
	b, a := before.Stats, after.Stats
	d := protocol.Diff(b.Stats, a.Stats)
	v := &ServerView{
		Admin: cfg.Admin, Variant: a.Variant,
		MessagesReceived: d.MessagesReceived, MessagesSent: d.MessagesSent,
		Dropped: d.BroadcastDropped, Invalid: d.InvalidMessages, Disconnects: d.Disconnects,
		ConnectionsActive: a.ConnectionsActive, ResidentBytes: a.ResidentBytes, Replicas: parts,
	}
	v.CPUSeconds = scenario.CPU(before, after)
	return v, ""
}

// latencyOf summarises h (microseconds) in seconds; nil when empty.
func latencyOf(h *hdrhistogram.Histogram) *protocol.Latency {
	if h.TotalCount() == 0 {
		return nil
	}
	l := protocol.LatencyOf(h)
	return &l
}

// WriteCSV writes the samples, one row a second.
func (r *Report) WriteCSV(w io.Writer) error { return timeline.WriteCSV(w, r.Samples) }

// HTMLRun is the run for an HTML report, with the deliveries the client
// counted against the messages the server says it sent.
func (r *Report) HTMLRun() (htmlreport.Run, error) {
	run := htmlreport.Run{
		Name:    fmt.Sprintf("%d subscribers on %s, %s", r.Subscribers, r.URL, r.Mode),
		Samples: r.Samples, Unit: "deliveries", Distribution: r.Distribution,
	}
	var sent *float64
	if s := r.Server; s != nil {
		sent = new(float64(s.MessagesSent))
	}
	run.Counts = []htmlreport.Count{{Name: "deliveries received (server: messages sent)", Client: float64(r.Received), Server: sent}}
	return run.WithReport(r.WriteTable)
}

// WriteTable writes the report as a table, the server's figures beside the
// client's.
func (r *Report) WriteTable(w io.Writer) error {
	how := fmt.Sprintf("%s, %s in total", plural.Of(r.Senders, "sender"), plural.Of(r.Rate, "broadcast/s", "broadcasts/s"))
	if r.Mode == "push" {
		how = "the server's timed push"
	}
	fmt.Fprintf(w, "broadcast: %s on %s, %s, for %s (%s %s)\n", plural.Of(r.Subscribers, "subscriber"), r.URL, how, r.Duration, r.Client, r.Version)
	if r.Interrupted {
		fmt.Fprintf(w, "interrupted: the figures cover %.1fs of the window\n", r.WindowSeconds)
	}
	s := r.Server
	t := sidebyside.New(w, s, func(s *ServerView) string { return sidebyside.Header(s.Variant, s.Admin, 0) })
	t.Row("connected", fmt.Sprintf("%d of %d (in %.2fs)", r.Connected, r.Subscribers+r.Senders, r.ConnectSeconds),
		t.Server(func(s *ServerView) string { return fmt.Sprintf("%d active", s.ConnectionsActive) }))
	if r.Mode == "push" {
		t.Row("pushes in the window", strconv.FormatUint(r.Pushes, 10), "")
	} else {
		t.Row("broadcasts sent", strconv.FormatUint(r.Sent, 10),
			t.Server(func(s *ServerView) string { return fmt.Sprintf("%d messages received", s.MessagesReceived) }))
	}
	t.Row("deliveries expected", strconv.FormatUint(r.Expected, 10), "")
	sent := t.Server(func(s *ServerView) string { return plural.Of(s.MessagesSent, "message") + " sent" })
	if r.Mode == "push" {
		t.Row("deliveries received", strconv.FormatUint(r.Received, 10), sent)
	} else {
		t.Row("deliveries received", strconv.FormatUint(r.Received, 10), "")
	}
	t.Row("lost", fmt.Sprintf("%d (%s)", r.Lost, percent(r.Lost, r.Expected)),
		t.Server(func(s *ServerView) string { return fmt.Sprintf("%d dropped for slow clients", s.Dropped) }))
	t.Row("duplicates", strconv.FormatUint(r.Duplicates, 10), "")
	if r.Mode == "broadcast" {
		// The server counts every message it sent: the deliveries, the
		// senders' broadcastResults, and the timed pushes of a target
		// started with -push-interval, which are not deliveries.
		if r.PushesReceived > 0 {
			t.Row("pushes received", fmt.Sprintf("%d (the target's -push-interval; not deliveries)", r.PushesReceived), "")
		}
		all := r.Received + r.Duplicates + uint64(r.Results) + r.PushesReceived + uint64(r.OtherShards)
		t.Row("messages received in all", fmt.Sprintf("%d (%s)", all, r.allParts()), sent)
	}
	t.Row("latency p50/p99/max", latencyString(r.Latency), "")
	if r.Mode == "broadcast" {
		t.Row("broadcastResult rtt p50/p99/max", latencyString(r.ResultRTT), "")
		t.Row("listenerCount", fmt.Sprintf("%s, %d with a listenerCount other than %d", plural.Of(r.Results, "broadcastResult"), r.ListenerMismatches, r.ListenerCount), "")
	}
	t.Row("cpu seconds", strconv.FormatFloat(r.ClientCPUSeconds, 'f', 2, 64),
		t.Server(func(s *ServerView) string {
			if s.CPUSeconds == nil {
				return "-"
			}
			return strconv.FormatFloat(*s.CPUSeconds, 'f', 2, 64)
		}))
	if s != nil && len(s.Disconnects) > 0 {
		t.Row("disconnects", "", tally.Line(s.Disconnects))
	}
	if s != nil && len(s.Invalid) > 0 {
		t.Row("invalid messages", "", tally.Line(s.Invalid))
	}
	if s != nil {
		t.Replicas(s.Replicas)
	}
	return t.Close(w, r.Errors, r.ServerError, r.Verdicts)
}

// allParts names what "messages received in all" adds up.
func (r *Report) allParts() string {
	parts := []string{"deliveries", "duplicates", "broadcastResults"}
	if r.PushesReceived > 0 {
		parts = append(parts, "pushes")
	}
	if r.OtherShards > 0 {
		parts = append(parts, "other shards' deliveries")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func latencyString(l *protocol.Latency) string {
	if l == nil {
		return "-"
	}
	ms := func(s float64) string { return strconv.FormatFloat(s*1000, 'f', 2, 64) + "ms" }
	return fmt.Sprintf("%s / %s / %s", ms(l.P50), ms(l.P99), ms(l.Max))
}

func percent(n, of uint64) string {
	if of == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 2, 64) + "%"
}

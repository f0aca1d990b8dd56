package echo

import (
	"errors"

	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Merge makes the report of a whole run from the -json reports of its
// shards (data, read from the files names, in any order): the client's
// counts added up, the latency from the shards' histograms added up
// (exact), the per-second samples added up (a second's percentiles are
// the highest shard's), and the server's view taken once over every
// shard's window, from each replica's earliest read before and latest
// read after. A shard's -pid CPU figures are left out.
func Merge(names []string, data [][]byte) (*Report, error) {
	reps, whole, g, err := scenario.ReadShards(names, data, "an echo", "-mode, -size, -text, -duration or -warmup", (*Report).shardFigures)
	if err != nil {
		return nil, err
	}
	first := reps[0]
	out := &Report{Heading: first.Heading, Mode: first.Mode, Size: first.Size, Text: first.Text, Inflight: first.Inflight,
		Duration: first.Duration, Warmup: first.Warmup}
	late := protocol.NewHistogram()
	var windows [][]replicas.Replica
	for _, r := range reps {
		out.Conns += r.Conns
		out.Rate += r.Rate
		out.Connected += r.Connected
		out.Messages += r.Messages
		out.Sent += r.Sent
		out.BehindSchedule += r.BehindSchedule
		out.MessagesPerSecond += r.MessagesPerSecond // the shards ran at the same time
		out.WindowSeconds = max(out.WindowSeconds, r.WindowSeconds)
		out.Interrupted = out.Interrupted || r.Interrupted
		out.ClientCPUSeconds += r.ClientCPUSeconds
		late.Merge(timeline.HistogramOf(r.SendLateHistogram))
		if r.Server != nil {
			windows = append(windows, r.Server.Replicas)
		}
	}
	out.URL = g.URL()
	out.setLatency(g.Latency(), late)
	if out.Mode != Rate {
		out.SendLateP50ms, out.SendLateP99ms, out.SendLateMaxMs = nil, nil, nil
	}
	out.Samples = g.Samples()
	out.Errors = g.Errors()
	out.ServerError = g.ServerError()
	cpu := -1.0
	if len(windows) == len(reps) {
		merged, err := replicas.Merge(windows)
		if err != nil {
			return nil, err
		}
		out.Server = mergedView(whole.Admin, merged)
		if out.Server != nil && out.Server.CPUSeconds != nil {
			cpu = *out.Server.CPUSeconds
		}
	} else if out.ServerError == "" && whole.Admin != "" {
		out.ServerError = errors.New("a shard has no server view of its window").Error()
	}
	if !out.Interrupted {
		out.Verdicts = whole.Judge(cpu)
	}
	return out, nil
}

// mergedView is the server's view of the window from each replica's
// merged part; nil when no replica has one.
func mergedView(admin string, parts []replicas.Replica) *ServerView {
	d := replicas.Total(parts)
	if d == nil {
		return nil
	}
	var active int64
	for _, p := range parts {
		if p.After != nil {
			active += p.After.ConnectionsActive
		}
	}
	cpu := d.CPUSeconds
	v := &ServerView{Admin: admin, Variant: d.Variant, CPUSeconds: &cpu, CPUSource: "stats",
		MessagesReceived: &d.MessagesReceived, MessagesSent: &d.MessagesSent, BytesReceived: &d.BytesReceived, BytesSent: &d.BytesSent,
		ConnectionsActive: &active, Faults: d.Faults, AcceptErrors: d.AcceptErrors}
	if len(parts) > 1 {
		v.Replicas = parts
	}
	return v
}

// shardFigures are what Merge reads alike from every shard's report.
func (r *Report) shardFigures() scenario.ShardFigures {
	return scenario.ShardFigures{Part: r.Shard, Flags: [5]any{r.Mode, r.Size, r.Text, r.Duration, r.Warmup}, URL: r.URL, Samples: r.Samples,
		Errors: r.Errors, ServerError: r.ServerError, Counted: r.Messages > 0, Latency: r.LatencyHistogram}
}

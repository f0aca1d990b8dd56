package broadcast

import (
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Merge makes the report of a whole run from the -json reports of its
// shards (data, read from the files names, in any order): the client's
// counts added up, the latency from the shards' histograms added up
// (exact), the per-second samples added up (a second's percentiles are the
// highest shard's), and the server's view taken once over every shard's
// window, from each replica's earliest read before and latest read after.
// Each shard counts the deliveries of its own broadcasts to its own
// members: the deliveries that cross shards are in other_shards_deliveries
// and in the server's figures, not in expected, received or lost.
func Merge(names []string, data [][]byte) (*Report, error) {
	reps, whole, g, err := scenario.ReadShards(names, data, "a broadcast", "-push or -duration", (*Report).shardFigures)
	if err != nil {
		return nil, err
	}
	first := reps[0]
	out := &Report{Heading: first.Heading, Mode: first.Mode, Duration: first.Duration, Batches: []target.Batch{}}
	rtt := protocol.NewHistogram()
	for _, r := range reps {
		out.Subscribers += r.Subscribers
		out.Senders += r.Senders
		out.Rate += r.Rate
		out.Connected += r.Connected
		out.Failed += r.Failed
		out.ConnectSeconds = max(out.ConnectSeconds, r.ConnectSeconds)
		out.Batches = append(out.Batches, r.Batches...)
		out.Interrupted = out.Interrupted || r.Interrupted
		out.WindowSeconds = max(out.WindowSeconds, r.WindowSeconds)
		out.Sent += r.Sent
		out.Pushes = max(out.Pushes, r.Pushes)
		out.Expected += r.Expected
		out.Received += r.Received
		out.Lost += r.Lost
		out.Duplicates += r.Duplicates
		out.Results += r.Results
		out.ListenerMismatches += r.ListenerMismatches
		out.OtherShards += r.OtherShards
		out.PushesReceived += r.PushesReceived
		out.ClientCPUSeconds += r.ClientCPUSeconds
		rtt.Merge(timeline.HistogramOf(r.ResultRTTHistogram))
	}
	out.URL = g.URL()
	out.ListenerCount = int64(out.Connected)
	lat := g.Latency()
	out.Latency, out.Distribution, out.ResultRTT = latencyOf(lat), timeline.Distribution(lat), latencyOf(rtt)
	out.Samples = g.Samples()
	out.Errors = g.Errors()
	out.ServerError = g.ServerError()
	if before, after, ok := whole.Ends(); ok {
		out.Server, _ = serverView(Config{Common: scenario.Common{Admin: whole.Admin}}, before, after)
		if out.Server != nil {
			out.Server.Replicas = whole.Parts()
		}
	}
	if !out.Interrupted {
		out.Verdicts = whole.Judge(whole.ServerCPU())
	}
	return out, nil
}

// shardFigures are what Merge reads alike from every shard's report.
func (r *Report) shardFigures() scenario.ShardFigures {
	return scenario.ShardFigures{Part: r.Shard, Flags: [2]string{r.Mode, r.Duration}, URL: r.URL, Samples: r.Samples,
		Errors: r.Errors, ServerError: r.ServerError, Counted: r.Received > 0, Latency: r.LatencyHistogram}
}

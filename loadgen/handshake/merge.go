package handshake

import (
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Merge makes the report of a whole run from the -json reports of its
// shards (data, read from the files names, in any order): the client's
// counts added up, the latency from the shards' histograms added up
// (exact), the handshake rates added up (the shards connect at the same
// time), the per-second samples added up (a second's percentiles are the
// highest shard's), and the server's view taken once over every shard's
// run, from each replica's earliest read before and latest read after.
func Merge(names []string, data [][]byte) (*Report, error) {
	reps, whole, g, err := scenario.ReadShards(names, data, "a handshake", "-transport, -namespace or -deadline", (*Report).shardFigures)
	if err != nil {
		return nil, err
	}
	first := reps[0]
	out := &Report{Heading: first.Heading, Transport: first.Transport, Namespace: first.Namespace,
		Deadline: first.Deadline, Errors: map[string]int{}}
	for _, r := range reps {
		out.Attempts += r.Attempts
		out.Connected += r.Connected
		out.Echoed += r.Echoed
		out.Failed += r.Failed
		addCounts(&out.Errors, r.Errors)
		if len(r.EchoErrors) > 0 {
			addCounts(&out.EchoErrors, r.EchoErrors)
		}
		out.TotalMs = max(out.TotalMs, r.TotalMs)
		out.HandshakesPerSecond += r.HandshakesPerSecond
		out.ClientCPUSeconds += r.ClientCPUSeconds
	}
	out.URL = g.URL()
	lat := g.Latency()
	if lat.TotalCount() > 0 {
		l := protocol.LatencyOf(lat)
		out.P50ms, out.P95ms, out.P99ms, out.MaxMs = msPtr(l.P50*1000), msPtr(l.P95*1000), msPtr(l.P99*1000), msPtr(l.Max*1000)
	}
	out.Distribution = timeline.Distribution(lat)
	out.Samples = g.Samples()
	out.ServerError = g.ServerError()
	if before, after, ok := whole.Ends(); ok {
		out.Server = serverView(whole.Admin, before.Stats, after.Stats)
		out.Server.Replicas = whole.Parts()
	}
	out.Verdicts = whole.Judge(whole.ServerCPU())
	return out, nil
}

func addCounts(sum *map[string]int, m map[string]int) {
	if *sum == nil {
		*sum = map[string]int{}
	}
	for k, n := range m {
		(*sum)[k] += n
	}
}

// shardFigures are what Merge reads alike from every shard's report.
func (r *Report) shardFigures() scenario.ShardFigures {
	return scenario.ShardFigures{Part: r.Shard, Flags: [3]string{r.Transport, r.Namespace, r.Deadline}, URL: r.URL, Samples: r.Samples,
		ServerError: r.ServerError, Counted: r.Connected > 0, Latency: r.LatencyHistogram}
}

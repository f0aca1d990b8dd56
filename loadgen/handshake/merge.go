package handshake

import (
	"fmt"

	"github.com/knowngood/knowngood/loadgen/internal/replicas"
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
	reps, whole, err := scenario.DecodeShards(names, data, "a handshake", func(r *Report) *scenario.ShardPart { return r.Shard })
	if err != nil {
		return nil, err
	}
	first := reps[0]
	out := &Report{Client: first.Client, Version: first.Version, Transport: first.Transport, Namespace: first.Namespace,
		Deadline: first.Deadline, Errors: map[string]int{}}
	lat := protocol.NewHistogram()
	var g scenario.Gathered
	for i, r := range reps {
		if r.Transport != first.Transport || r.Namespace != first.Namespace || r.Deadline != first.Deadline {
			return nil, fmt.Errorf("%s and %s ran different flags (-transport, -namespace or -deadline): not shards of one run", names[0], names[i])
		}
		if r.Connected > 0 && len(r.LatencyHistogram) == 0 {
			return nil, fmt.Errorf("%s has no latency_histogram: not a sharded report", names[i])
		}
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
		lat.Merge(timeline.HistogramOf(r.LatencyHistogram))
		g.Add(names[i], r.URL, r.Samples, nil, r.ServerError)
	}
	out.URL = g.URL()
	if lat.TotalCount() > 0 {
		l := protocol.LatencyOf(lat)
		out.P50ms, out.P95ms, out.P99ms, out.MaxMs = msPtr(l.P50*1000), msPtr(l.P95*1000), msPtr(l.P99*1000), msPtr(l.Max*1000)
	}
	out.Distribution = timeline.Distribution(lat)
	out.Samples = g.Samples()
	out.ServerError = g.ServerError()
	cpu := -1.0
	if before, after, ok := replicas.Ends(whole.Replicas); ok {
		out.Server = serverView(whole.Admin, before, after)
		if len(whole.Replicas) > 1 {
			out.Server.Replicas = whole.Replicas
		}
		if out.Server.CPUSeconds != nil {
			cpu = *out.Server.CPUSeconds
		}
	}
	out.Verdicts = whole.Judge(cpu)
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

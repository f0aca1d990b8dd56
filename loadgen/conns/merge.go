package conns

import (
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Merge makes the report of a whole run from the -json reports of its
// shards (data, read from the files names, in any order): the client's
// counts added up, and the server's memory and connections from each
// replica's earliest read before and latest read after. The shards must
// hold their connections at the same time for the memory per connection
// to mean anything; a shard's -pid and -free-os-memory figures are left
// out.
func Merge(names []string, data [][]byte) (*Report, error) {
	reps, whole, g, err := scenario.ReadShards(names, data, "a conns", "-hold", (*Report).shardFigures)
	if err != nil {
		return nil, err
	}
	first := reps[0]
	out := &Report{Heading: first.Heading, Batch: first.Batch, Sources: first.Sources, Hold: first.Hold, Namespace: first.Namespace,
		Echo: first.Echo, Get: first.Get, Status: first.Status, OpenFiles: first.OpenFiles, Batches: []Batch{}}
	connect := protocol.NewHistogram()
	for _, r := range reps {
		connect.Merge(protocol.HistogramOf(r.ConnectHistogram))
		out.N += r.N
		out.OpenFilesAllow += r.OpenFilesAllow
		out.Established += r.Established
		out.Failed += r.Failed
		out.Dropped += r.Dropped
		out.Held += r.Held
		out.EstablishSeconds = max(out.EstablishSeconds, r.EstablishSeconds)
		out.Batches = append(out.Batches, r.Batches...)
		out.ClientCPUSeconds += r.ClientCPUSeconds
	}
	// The shards connect at the same time: the phase is the longest
	// shard's, and the rate is the whole run's over it.
	out.setConnect(connect)
	out.URL = g.URL()
	out.Samples = g.Samples()
	out.Errors = g.Errors()
	out.ServerError = g.ServerError()
	if before, after, ok := whole.Ends(); ok {
		out.Server, _ = serverView(Config{Common: scenario.Common{Admin: whole.Admin}}, sample{server: before}, sample{server: after}, nil, out.Held)
		if out.Server != nil {
			out.Server.Replicas = whole.Parts()
		}
	}
	out.Verdicts = whole.Judge(whole.ServerCPU())
	return out, nil
}

// shardFigures are what Merge reads alike from every shard's report.
func (r *Report) shardFigures() scenario.ShardFigures {
	return scenario.ShardFigures{Part: r.Shard, Flags: r.Hold, URL: r.URL, Samples: r.Samples, Errors: r.Errors, ServerError: r.ServerError}
}

package scenario

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// MergeShards checks that parts are every shard of one sharded run, each
// once (names: the files they came from, for the errors), and merges them
// into the part of the whole run: the client's counts added up, and each
// replica's earliest read before and latest read after, so that the
// server's view covers every shard's window.
func MergeShards(names []string, parts []*ShardPart) (*ShardPart, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("no reports to merge")
	}
	by := map[int]string{}
	for i, p := range parts {
		if p == nil || !p.Shard.Set() {
			return nil, fmt.Errorf("%s is not a sharded report: run each shard with -shard I/N and -json FILE", names[i])
		}
		first := parts[0]
		if p.Scenario != first.Scenario {
			return nil, fmt.Errorf("mixed scenarios: %s is %s, %s is %s", names[0], first.Scenario, names[i], p.Scenario)
		}
		if p.Shard.N != first.Shard.N {
			return nil, fmt.Errorf("%s is shard %s, %s is shard %s: not the same split", names[0], first.Shard, names[i], p.Shard)
		}
		if prev, ok := by[p.Shard.I]; ok {
			return nil, fmt.Errorf("shard %s is given twice: %s and %s", p.Shard, prev, names[i])
		}
		by[p.Shard.I] = names[i]
	}
	var missing []string
	for i := 1; i <= parts[0].Shard.N; i++ {
		if _, ok := by[i]; !ok {
			missing = append(missing, Shard{I: i, N: parts[0].Shard.N}.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("shard %s missing: give every shard's report", strings.Join(missing, ", "))
	}

	out := &ShardPart{Scenario: parts[0].Scenario, Config: parts[0].Config, Admin: parts[0].Admin}
	var runs [][]replicas.Replica
	v := &out.Verdict
	for i, p := range parts {
		if p.Admin != out.Admin {
			return nil, fmt.Errorf("%s read /stats from %s, %s from %s: every shard needs the same -admin (every replica's)", names[0], out.Admin, names[i], p.Admin)
		}
		runs = append(runs, p.Replicas)
		pv := p.Verdict
		v.Attempts += pv.Attempts
		v.Connected += pv.Connected
		v.Answered += pv.Answered
		v.Unit = pv.Unit // one URL, so one unit, for every shard
		v.Deadline = max(v.Deadline, pv.Deadline)
		v.Sent, v.Received, v.Lost = addKnown(v.Sent, pv.Sent, i), addKnown(v.Received, pv.Received, i), addKnown(v.Lost, pv.Lost, i)
		v.Slack += pv.Slack
		v.ClientCPU = addKnown(v.ClientCPU, pv.ClientCPU, i)
		v.Window = max(v.Window, pv.Window)
		v.Cores += pv.Cores
	}
	merged, err := replicas.Merge(runs)
	if err != nil {
		return nil, err
	}
	out.Replicas = merged
	return out, nil
}

// addKnown adds counts (or CPU seconds), negative (not kept) when either
// is; i is the shard's place, 0 for the first.
func addKnown[N int64 | float64](sum, n N, i int) N {
	switch {
	case i == 0:
		return n
	case sum < 0 || n < 0:
		return -1
	}
	return sum + n
}

// Ends are the server's reads that bracket every shard's run: each
// replica's earliest read before and latest read after, summed; false
// without them.
func (p *ShardPart) Ends() (before, after *Snapshot, ok bool) {
	b, a, ok := replicas.Ends(p.Replicas)
	if !ok {
		return nil, nil, false
	}
	return &Snapshot{Stats: b}, &Snapshot{Stats: a}, true
}

// Parts are each replica's part of the run, for the merged report's
// server view; nil for a single replica, whose part is the whole.
func (p *ShardPart) Parts() []replicas.Replica {
	if len(p.Replicas) < 2 {
		return nil
	}
	return p.Replicas
}

// ServerCPU is the server's CPU seconds over every shard's run, from each
// replica's earliest read before and latest read after; -1 (the
// verdicts' unknown) without them.
func (p *ShardPart) ServerCPU() float64 {
	before, after, ok := p.Ends()
	if !ok {
		return -1
	}
	return *after.Stats.CPUSeconds - *before.Stats.CPUSeconds
}

// Judge applies the verdict rules to the merged counts and the server's
// view of every shard's window; serverCPU is the server's CPU seconds
// over the measured window (negative when unknown).
func (p *ShardPart) Judge(serverCPU float64) []verdict.Verdict {
	v := p.Verdict
	v.Server = replicas.Total(p.Replicas)
	v.Config = p.Config
	v.ServerCPU = serverCPU
	if len(p.Replicas) > 1 {
		v.Replicas = p.Replicas
	}
	return verdict.Judge(v)
}

// ReadShards reads the -json reports of a sharded run (data, from the
// files names) into R, merges their shard parts (MergeShards), and
// gathers what every scenario's merge reads alike from them (figures),
// checking that they are shards of one run: flags names the flags they
// must all have run alike. kind names the scenario in the error for a
// file that is not its report.
func ReadShards[R any](names []string, data [][]byte, kind, flags string, figures func(*R) ShardFigures) ([]*R, *ShardPart, *Gathered, error) {
	reps, whole, err := decodeShards(names, data, kind, func(r *R) *ShardPart { return figures(r).Part })
	if err != nil {
		return nil, nil, nil, err
	}
	g := &Gathered{Flags: flags}
	for i, r := range reps {
		if err := g.Add(names[i], figures(r)); err != nil {
			return nil, nil, nil, err
		}
	}
	return reps, whole, g, nil
}

// decodeShards reads the reports into R and merges their shard parts.
func decodeShards[R any](names []string, data [][]byte, kind string, part func(*R) *ShardPart) ([]*R, *ShardPart, error) {
	reps := make([]*R, len(data))
	parts := make([]*ShardPart, len(data))
	for i, b := range data {
		if err := json.Unmarshal(b, &reps[i]); err != nil || reps[i] == nil {
			return nil, nil, fmt.Errorf("%s: not %s report: %v", names[i], kind, err)
		}
		parts[i] = part(reps[i])
	}
	whole, err := MergeShards(names, parts)
	if err != nil {
		return nil, nil, err
	}
	return reps, whole, nil
}

// Gathered is what every scenario's merge collects alike from the shards'
// reports: the target URLs (each once, in the shards' order), the
// per-second samples, the errors by kind, the latency histograms, and
// each shard's server error, named by its file. It also checks that the
// reports are shards of one run.
type Gathered struct {
	// Flags names the flags that every shard of one run ran alike, for
	// the error when one did not.
	Flags string

	firstName        string
	firstFlags       any
	urls, serverErrs []string
	samples          [][]timeline.Sample
	errs             []map[string]tally.Count
	latency          *hdrhistogram.Histogram
}

// ShardFigures are what of one shard's report ReadShards and Gathered
// read.
type ShardFigures struct {
	// Part is the report's part for the merge; nil: not a sharded report.
	Part *ShardPart
	// Flags are the shard's values of the flags Gathered.Flags names, as
	// one comparable value: every shard must have the first one's.
	Flags       any
	URL         string
	Samples     []timeline.Sample
	Errors      map[string]tally.Count // nil for a report that counts its errors otherwise
	ServerError string
	// Counted: the shard measured a latency, whose histogram a sharded
	// report carries as Latency (its non-empty buckets); false and nil
	// for a scenario that measures none.
	Counted bool
	Latency []protocol.Bucket
}

// Add is one shard's part; name is its file. The error says why the
// report is not a shard of the same run as the first: other flags, or no
// latency histogram.
func (g *Gathered) Add(name string, s ShardFigures) error {
	if len(g.samples) == 0 { // the first shard, which the others must match
		g.firstName, g.firstFlags = name, s.Flags
	} else if s.Flags != g.firstFlags {
		return fmt.Errorf("%s and %s ran different flags (%s): not shards of one run", g.firstName, name, g.Flags)
	}
	if s.Counted && len(s.Latency) == 0 {
		return fmt.Errorf("%s has no latency_histogram: not a sharded report", name)
	}
	if !slices.Contains(g.urls, s.URL) {
		g.urls = append(g.urls, s.URL)
	}
	g.samples = append(g.samples, s.Samples)
	if s.Errors != nil {
		g.errs = append(g.errs, s.Errors)
	}
	if s.ServerError != "" {
		g.serverErrs = append(g.serverErrs, name+": "+s.ServerError)
	}
	if g.latency == nil {
		g.latency = protocol.NewHistogram()
	}
	g.latency.Merge(timeline.HistogramOf(s.Latency))
	return nil
}

// Latency is the shards' latency histograms added up: exact, unlike
// percentiles merged.
func (g *Gathered) Latency() *hdrhistogram.Histogram {
	if g.latency == nil {
		return protocol.NewHistogram()
	}
	return g.latency
}

// URL is the shards' target URLs, comma-separated.
func (g *Gathered) URL() string { return strings.Join(g.urls, ",") }

// Samples are the shards' samples, second by second added up.
func (g *Gathered) Samples() []timeline.Sample { return timeline.MergeSamples(g.samples) }

// Errors are the shards' errors, kind by kind added up.
func (g *Gathered) Errors() map[string]tally.Count { return tally.Merge(g.errs...) }

// ServerError is the shards' server errors, each after its file's name.
func (g *Gathered) ServerError() string { return strings.Join(g.serverErrs, "; ") }

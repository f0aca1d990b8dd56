package scenario

import (
	"context"
	"runtime"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/proc"
	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
)

// Scenario is one scenario's own part of a run; R is its report. The
// skeleton calls Prepare, reads /stats, calls Load, reads /stats again
// (unless Load says there is nothing to read), and calls Finish.
type Scenario[R any] interface {
	// Prepare is what must be in place before the server's figures
	// count (the broadcast members joined). An error ends the run.
	Prepare(ctx context.Context, f *Frame) error
	// Load is the work the two reads bracket. false: the run ended
	// early (nothing connected, or interrupted) and the second read is
	// not taken.
	Load(ctx context.Context, f *Frame) bool
	// Finish closes what is still open, fills in the report and judges
	// it (f.Judge).
	Finish(ctx context.Context, f *Frame) R
}

// Options shape the skeleton's part.
type Options struct {
	Admin string // the target's admin listener; "" for none
	// Settle > 0: the second read waits, up to Settle, for the server to
	// see the run's connections go, so that their closes are counted; it
	// is taken only after a good first read. 0: the second read is taken
	// as soon as Load returns, whatever the first gave.
	Settle time.Duration
	// Scenario names the scenario and Shard is its -shard, for the part
	// of a sharded report that 'loadgen merge' reads.
	Scenario string
	Shard    Shard
}

// Frame is what the skeleton knows of a run, for the scenario's part.
type Frame struct {
	Target *Target
	// Before and After are the two /stats reads; nil when not taken.
	Before, After *Snapshot
	// ClientCPU is this process's user+system CPU seconds over Load, and
	// Window Load's wall time.
	ClientCPU float64
	Window    time.Duration

	opt    Options
	judged *verdict.Run // what Judge judged
}

// Run runs s between two reads of the target's /stats, and returns its
// report. It returns an error only when Prepare did.
func Run[R any](ctx context.Context, opt Options, s Scenario[R]) (R, error) {
	f := &Frame{Target: Open(ctx, opt.Admin), opt: opt}
	defer f.Target.Close()
	if err := s.Prepare(ctx, f); err != nil {
		var zero R
		return zero, err
	}
	f.Before = f.Target.Snapshot(ctx)
	began, cpu0 := time.Now(), proc.SelfCPUSeconds()
	more := s.Load(ctx, f)
	f.ClientCPU, f.Window = proc.SelfCPUSeconds()-cpu0, time.Since(began)
	if more {
		if opt.Settle > 0 {
			f.After = f.Target.Settled(ctx, f.Before, opt.Settle)
		} else {
			f.After = f.Target.Snapshot(ctx)
		}
	}
	return s.Finish(ctx, f), nil
}

// ServerCPU is the server's CPU seconds between the two reads, -1 when
// unknown (the verdicts' convention).
func (f *Frame) ServerCPU() float64 {
	if cpu := CPU(f.Before, f.After); cpu != nil {
		return *cpu
	}
	return -1
}

// Judge applies the verdict rules to the client's counts in v, with what
// the server counted between the two reads, its configuration and this
// machine's cores filled in.
func (f *Frame) Judge(v verdict.Run) []verdict.Verdict {
	v.Server = Diff(f.Before, f.After)
	v.Config = f.Target.Config
	v.Cores = runtime.GOMAXPROCS(0)
	v.Shard = f.opt.Shard.String()
	if parts := Parts(f.Before, f.After); len(parts) > 1 {
		v.Replicas = parts
	}
	f.judged = &v
	return verdict.Judge(v)
}

// ShardPart is what a sharded run's -json report carries for 'loadgen
// merge': the scenario and shard, the client's counts as the verdicts
// read them, and each replica's raw /stats before and after the run, so
// that the merged report judges the shards' sums against the server's
// view of all of them.
type ShardPart struct {
	Scenario string             `json:"scenario"`
	Shard    Shard              `json:"shard"`
	Verdict  verdict.Run        `json:"verdict_input"`
	Config   map[string]string  `json:"config,omitempty"`
	Admin    string             `json:"admin,omitempty"`
	Replicas []replicas.Replica `json:"run_replicas,omitempty"`
}

// ShardPart is the run's part for 'loadgen merge'; nil unless the run is
// sharded and was judged.
func (f *Frame) ShardPart() *ShardPart {
	if !f.opt.Shard.Set() || f.judged == nil {
		return nil
	}
	return &ShardPart{Scenario: f.opt.Scenario, Shard: f.opt.Shard, Verdict: *f.judged, Config: f.judged.Config,
		Admin: f.Target.Admin, Replicas: Parts(f.Before, f.After)}
}

// ReplicasOf is each replica's part between before and after, for a
// report: only for several replicas, or a sharded run (whose report
// 'loadgen merge' reads); else nil, and the report shows none.
func (c Common) ReplicasOf(before, after *Snapshot) []replicas.Replica {
	parts := Parts(before, after)
	if len(parts) < 2 && !c.Shard.Set() {
		return nil
	}
	return parts
}

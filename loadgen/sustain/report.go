package sustain

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/loadgen/internal/proc"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/schedlat"
)

// Step is one step's figures, over its window.
type Step struct {
	Step   int   `json:"step"`   // from 1
	Target int   `json:"target"` // clients this step holds
	Held   int64 `json:"held"`   // connected at its end
	// Connecting: clients queued for a connect or in one at its end, the
	// load client's connects not yet done (the target may have counted
	// some of them). Held + Connecting below Target is what the target
	// refused or dropped, or a client waiting out its back-off.
	Connecting int64   `json:"connecting"`
	WindowS    float64 `json:"window_s"`
	// Connects: attempts (first connects, reconnects and retries), those
	// that succeeded, and of those the reconnects of a client that had
	// been connected before.
	Attempts    int64          `json:"attempts"`
	Connected   int64          `json:"connected"`
	Reconnected int64          `json:"reconnected"`
	Errors      map[string]int `json:"errors"`
	// Lost: connections that ended without the client closing them;
	// churned: closed on purpose (-churn) and opened again.
	Lost    int64 `json:"lost"`
	Churned int64 `json:"churned"`
	// Emits and their acks (ack_errors: timed out or disconnected).
	Emits     int64 `json:"emits"`
	Acks      int64 `json:"acks"`
	AckErrors int64 `json:"ack_errors"`
	Joins     int64 `json:"joins"`
	// Room pushes emitted by this process's clients, and the deliveries
	// its clients received (from every process's pushes).
	PushesSent     int64 `json:"pushes_sent"`
	PushesReceived int64 `json:"pushes_received"`
	// Latency, and its histogram for an exact merge of several shards.
	EmitLatency protocol.Latency  `json:"emit_latency"`
	EmitBuckets []protocol.Bucket `json:"emit_buckets"`
	PushLatency protocol.Latency  `json:"push_latency"`
	PushBuckets []protocol.Bucket `json:"push_buckets"`
	// The same split by hop (shared/hops), with -hops against a target
	// that stamps.
	EmitHops map[string]protocol.Distribution `json:"emit_hops,omitempty"`
	PushHops map[string]protocol.Distribution `json:"push_hops,omitempty"`
	// This process's CPU over the step and its resident memory at the end.
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
	ClientRSSBytes   float64 `json:"client_rss_bytes"`
	// How long this process's goroutines (its readers, writers and
	// timers) waited to run once ready, over the step (the Go runtime's
	// scheduling latency): high, and the client itself held messages.
	ClientSchedP50S float64 `json:"client_sched_p50_s"`
	ClientSchedP99S float64 `json:"client_sched_p99_s"`
	// With -loop, how long a task given to the event loops waited to
	// run over the step: how late they read what came (their readers are
	// not goroutines, so the scheduling latency above leaves them out).
	ClientLoopLagP50S float64 `json:"client_loop_lag_p50_s,omitempty"`
	ClientLoopLagP99S float64 `json:"client_loop_lag_p99_s,omitempty"`
}

// Report is a run of the scenario.
type Report struct {
	URL        string `json:"url"`
	N          int    `json:"n"`
	Shard      string `json:"shard,omitempty"`
	Steps      []Step `json:"steps"`
	Rooms      int    `json:"rooms"`
	EmitEvery  string `json:"emit_every"`
	Event      string `json:"event"`
	Client     string `json:"client"`
	StepLength string `json:"step_duration"`
	// Totals over the steps.
	Attempts    int64   `json:"attempts"`
	Connected   int64   `json:"connected"`
	Reconnected int64   `json:"reconnected"`
	Lost        int64   `json:"lost"`
	AckErrors   int64   `json:"ack_errors"`
	SuccessPct  float64 `json:"success_pct"`
	// Ever: clients connected at least once; a client counts once however
	// often it reconnected.
	Ever int `json:"clients_connected"`
	// HeldPerSecond: clients connected at each second of the run.
	HeldPerSecond    []int64           `json:"held_per_second"`
	ClientCPUSeconds float64           `json:"client_cpu_seconds"`
	Server           *protocol.Stats   `json:"server,omitempty"`
	ServerError      string            `json:"server_error,omitempty"`
	Verdicts         []verdict.Verdict `json:"verdicts"`
	scenario.Checks
}

func newReport(cfg Config) *Report {
	rep := &Report{URL: cfg.URL, N: cfg.N, Rooms: cfg.Rooms, Event: cfg.Event, Client: cfg.Client, StepLength: cfg.StepDuration.String(),
		EmitEvery: cfg.EmitMin.String() + "-" + cfg.EmitMax.String(), HeldPerSecond: []int64{}}
	if cfg.Shard.Set() {
		rep.Shard = cfg.Shard.String()
	}
	return rep
}

// take closes step k: its counts and histograms, swapped for fresh ones.
func (r *run) take(k int, start time.Time, cpu0 float64) Step {
	c := &r.counts
	s := Step{Step: k + 1, Target: r.cfg.target(k), Held: r.held.Load(), Connecting: r.connecting.Load(), WindowS: time.Since(start).Seconds()}
	// Outcomes before their causes: a connect, emit or push that comes
	// between the two reads counts in this step and its outcome in the
	// next, never an outcome here whose cause no step counts (acks above
	// emits over the run, a connect success above 100%).
	r.latMu.Lock()
	s.Acks = c.acks.Swap(0)
	emit, push := r.emitLat, r.pushLat
	r.emitLat, r.pushLat = protocol.NewHistogram(), protocol.NewHistogram()
	r.latMu.Unlock()
	s.Connected, s.Reconnected, s.Lost = c.connected.Swap(0), c.reconnected.Swap(0), c.lost.Swap(0)
	s.AckErrors, s.PushesReceived = c.ackErrors.Swap(0), c.pushesReceived.Swap(0)
	c.mu.Lock()
	s.Errors, c.errors = c.errors, map[string]int{}
	c.mu.Unlock()
	s.Attempts, s.Churned, s.Emits = c.attempts.Swap(0), c.churned.Swap(0), c.emits.Swap(0)
	s.Joins, s.PushesSent = c.joins.Swap(0), c.pushesSent.Swap(0)
	s.ClientCPUSeconds, s.ClientRSSBytes = proc.SelfCPUSeconds()-cpu0, rss()
	s.EmitLatency, s.EmitBuckets = protocol.LatencyOf(emit), protocol.Buckets(emit)
	s.PushLatency, s.PushBuckets = protocol.LatencyOf(push), protocol.Buckets(push)
	s.EmitHops, s.PushHops = r.emitHops.take(), r.pushHops.take()
	var sched protocol.Distribution
	sched, r.sched = schedlat.Since(r.sched)
	s.ClientSchedP50S, s.ClientSchedP99S = sched.Latency.P50, sched.Latency.P99
	if r.loop != nil {
		lag := r.loop.TakeLag()
		s.ClientLoopLagP50S, s.ClientLoopLagP99S = lag.P50, lag.P99
	}
	return s
}

// total adds the steps up.
func (rep *Report) total() {
	for _, s := range rep.Steps {
		rep.Attempts += s.Attempts
		rep.Connected += s.Connected
		rep.Reconnected += s.Reconnected
		rep.Lost += s.Lost
		rep.AckErrors += s.AckErrors
	}
	rep.SuccessPct = Percent(rep.Connected, rep.Attempts)
}

// Percent is part of all in percent, 100 for nothing attempted.
func Percent(part, all int64) float64 {
	if all == 0 {
		return 100
	}
	return 100 * float64(part) / float64(all)
}

// latencyAll is every step's histogram of one kind merged.
func (rep *Report) latencyAll(buckets func(Step) []protocol.Bucket) protocol.Latency {
	h := protocol.NewHistogram()
	for _, s := range rep.Steps {
		h.Merge(timeline.HistogramOf(buckets(s)))
	}
	return protocol.LatencyOf(h)
}

// Outcome is what the report says of its run, for the exit status.
func (rep *Report) Outcome() scenario.Outcome {
	out := scenario.Outcome{Attempts: int(rep.Attempts), Connected: int(rep.Connected), Verdicts: rep.Verdicts,
		Metrics: threshold.Values{"success": rep.SuccessPct / 100, "lost": float64(rep.Lost), "ack_errors": float64(rep.AckErrors)}}
	if n := len(rep.Steps); n > 0 {
		out.Metrics["held"] = float64(rep.Steps[n-1].Held)
	}
	if l := rep.latencyAll(func(s Step) []protocol.Bucket { return s.EmitBuckets }); l.Count > 0 {
		out.Metrics["p99"] = l.P99 * 1000
	}
	if l := rep.latencyAll(func(s Step) []protocol.Bucket { return s.PushBuckets }); l.Count > 0 {
		out.Metrics["push_p99"] = l.P99 * 1000
	}
	return out
}

// WriteJSON writes the report as one JSON object.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTable prints a row per step, then the totals and the verdicts.
func (rep *Report) WriteTable(w io.Writer) error {
	client := ""
	if rep.Client != "" {
		client = " (" + rep.Client + ")"
	}
	fmt.Fprintf(w, "sustain: %d Socket.IO clients%s over WebSocket to %s, %d steps of %s; each emits %q every %s; %d rooms\n",
		rep.N, client, rep.URL, len(rep.Steps), rep.StepLength, rep.Event, rep.EmitEvery, rep.Rooms)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\ttarget\theld\tconnect %\tlost\treconnected\temits/s\temit p50 ms\temit p99 ms\tpushes recv/s\tpush p99 ms\tclient CPU %\tclient RSS MiB\t")
	for _, s := range rep.Steps {
		win := max(s.WindowS, 1e-9)
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.2f\t%d\t%d\t%.0f\t%.1f\t%.1f\t%.0f\t%.1f\t%.0f\t%.0f\t\n", s.Step, s.Target, s.Held,
			Percent(s.Connected, s.Attempts), s.Lost, s.Reconnected, float64(s.Acks)/win, s.EmitLatency.P50*1000,
			s.EmitLatency.P99*1000, float64(s.PushesReceived)/win, s.PushLatency.P99*1000, 100*s.ClientCPUSeconds/win, s.ClientRSSBytes/(1<<20))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range rep.Steps {
		if s.Connecting > 0 {
			fmt.Fprintf(w, "step %d ended with %d clients still connecting (queued for one of -inflight's dialers, or in a connect): neither held nor failed\n", s.Step, s.Connecting)
		}
	}
	fmt.Fprintf(w, "connects %d of %d attempts (%.2f%%), %d reconnects, %d lost, %d acks missing; %d clients connected at least once\n",
		rep.Connected, rep.Attempts, rep.SuccessPct, rep.Reconnected, rep.Lost, rep.AckErrors, rep.Ever)
	errs := map[string]int{}
	for _, s := range rep.Steps {
		for k, v := range s.Errors {
			errs[k] += v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		fmt.Fprintf(w, "  %6d  %s\n", errs[k], k)
	}
	if rep.ServerError != "" {
		fmt.Fprintln(w, rep.ServerError)
	}
	verdict.Write(w, rep.Verdicts)
	return nil
}

// WriteCSV writes the clients held at every second (count), with the
// timeline's columns.
func (rep *Report) WriteCSV(w io.Writer) error { return timeline.WriteCSV(w, rep.samples()) }

func (rep *Report) samples() []timeline.Sample {
	out := make([]timeline.Sample, len(rep.HeldPerSecond))
	for i, n := range rep.HeldPerSecond {
		out[i] = timeline.Sample{Second: i, Count: n}
	}
	return out
}

// HTMLRun is the run for the -html page: the table, and the clients held
// at every second.
func (rep *Report) HTMLRun() (htmlreport.Run, error) {
	run := htmlreport.Run{Name: "sustain " + rep.URL, Concurrency: rep.N, Attempts: int(rep.Attempts), Succeeded: int(rep.Connected),
		Samples: rep.samples(), Unit: "clients held",
		Distribution: timeline.Distribution(timeline.HistogramOf(mergedBuckets(rep.Steps)))}
	return run.WithReport(rep.WriteTable)
}

// mergedBuckets is every step's emit histogram in one.
func mergedBuckets(steps []Step) []protocol.Bucket {
	h := protocol.NewHistogram()
	for _, s := range steps {
		h.Merge(timeline.HistogramOf(s.EmitBuckets))
	}
	return protocol.Buckets(h)
}

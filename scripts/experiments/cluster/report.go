package main

import (
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/loadgen/passfail"
	"github.com/knowngood/knowngood/loadgen/sustain"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/protocol"
)

// report is the experiment's result; its JSON is -json's.
type report struct {
	Conns              int               `json:"conns"`
	Replicas           int               `json:"replicas"`
	Shards             int               `json:"shards"`
	SourcesPerShard    int               `json:"sources_per_shard"` // loopback addresses each shard dials from; 0 = the kernel's choice
	NginxWorkers       int               `json:"nginx_workers"`
	OpenFilesLimit     int               `json:"open_files_limit"`
	SuccessPct         float64           `json:"success_pct"`
	P99ms              float64           `json:"p99_ms"`
	PushP99ms          float64           `json:"push_p99_ms"`
	MsgsPerSPerReplica float64           `json:"msgs_per_s_per_replica"`
	CPUPctMax          float64           `json:"cpu_pct_max"`
	MemPctMax          float64           `json:"mem_pct_max"`
	Lost               int64             `json:"lost"`
	Reconnected        int64             `json:"reconnected"`
	RecoverS           *float64          `json:"recover_s"`
	Fault              string            `json:"fault,omitempty"`
	RedisShards        int               `json:"redis_shards"`
	Engine             string            `json:"engine,omitempty"`
	Client             string            `json:"client,omitempty"`
	ClientLoop         bool              `json:"client_loop"`
	PingInterval       string            `json:"ping_interval,omitempty"`
	StepDuration       string            `json:"step_duration"`
	EmitInterval       string            `json:"emit_interval"`
	PushRate           float64           `json:"push_rate"`
	Steps              []stepRow         `json:"steps"`
	Reconcile          []reconcileRow    `json:"reconcile"`
	Limit              *limit            `json:"limit"`
	Verdicts           []string          `json:"verdicts"`
	Thresholds         []passfail.Result `json:"thresholds"`
	// LargestHeld: the connections of the last step up to which every
	// step met every threshold; LargestHeldMissed, what the next missed.
	LargestHeld       int               `json:"largest_held"`
	LargestHeldMissed []string          `json:"largest_held_missed,omitempty"`
	Machine           string            `json:"machine"`
	heldPerSecond     []int64           // every shard's, summed
	emitAll           *protocol.Latency // every step's emits
}

// stepRow is one step: the clients' figures summed over the shards, the
// servers' over the replicas, each replica's beside.
type stepRow struct {
	Step         int              `json:"step"`
	Target       int              `json:"target"`
	Held         int64            `json:"held"`
	Connecting   int64            `json:"connecting"` // the clients' connects not done at the step's end
	ServerActive int64            `json:"server_active"`
	Attempts     int64            `json:"attempts"`
	Connected    int64            `json:"connected"`
	SuccessPct   float64          `json:"success_pct"`
	Lost         int64            `json:"lost"`
	Reconnected  int64            `json:"reconnected"`
	Errors       map[string]int   `json:"errors,omitempty"`
	AcksPerS     float64          `json:"acks_per_s"`
	PushesPerS   float64          `json:"pushes_received_per_s"`
	MsgsPerS     float64          `json:"msgs_per_s"`
	MsgsPerSPer  float64          `json:"msgs_per_s_per_replica"`
	Emit         protocol.Latency `json:"emit_latency"`
	Push         protocol.Latency `json:"push_latency"`
	// EmitHops and PushHops split the same by hop (shared/hops), every
	// shard's merged.
	EmitHops map[string]protocol.Latency `json:"emit_hops,omitempty"`
	PushHops map[string]protocol.Latency `json:"push_hops,omitempty"`
	// ClientSchedP99ms: the longest of the shards' Go scheduling latency
	// p99 (how long a ready reader or writer waited to run).
	ClientSchedP99ms float64 `json:"client_sched_p99_ms"`
	// ClientLoopLagP99ms: the longest of the shards' event-loop lag p99
	// (how late the lean client's loops read what came; 0 on goroutines).
	ClientLoopLagP99ms float64 `json:"client_loop_lag_p99_ms"`
	// ReplicaSchedP99ms: the same of the replicas (their /stats), the
	// longest.
	ReplicaSchedP99ms float64      `json:"replica_sched_p99_ms"`
	ClientCPUPct      float64      `json:"client_cpu_pct"`
	ClientRSSMiB      float64      `json:"client_rss_mib"`
	NginxCPUPct       float64      `json:"nginx_cpu_pct"`
	NginxRSSMiB       float64      `json:"nginx_rss_mib"`
	RedisCPUPct       []float64    `json:"redis_cpu_pct"`
	RedisRSSMiB       []float64    `json:"redis_rss_mib"`
	MachinePct        float64      `json:"machine_cpu_pct"`
	MemPct            float64      `json:"mem_pct"`
	Fds               fdRow        `json:"fds"`
	Replicas          []replicaRow `json:"replicas"`
}

// fdRow is the most descriptors one process of each kind held.
type fdRow struct {
	Replica int `json:"replica"`
	Nginx   int `json:"nginx_worker"`
	Client  int `json:"loadgen"`
}

// replicaRow is one replica at one step.
type replicaRow struct {
	Name        string  `json:"name"`
	Alive       bool    `json:"alive"`
	NoStats     bool    `json:"no_stats,omitempty"` // running, but its /stats did not answer`
	Active      int64   `json:"active"`
	MsgsPerS    float64 `json:"msgs_per_s"`
	CPUPct      float64 `json:"cpu_pct"`
	RSSMiB      float64 `json:"rss_mib"`
	KiBPerConn  float64 `json:"rss_kib_per_conn"`
	Fds         int     `json:"fds"`
	Limit       int     `json:"open_files_limit"`
	EMFILE      uint64  `json:"emfile_refusals"` // since the start
	LeakTimers  uint64  `json:"leak_timers"`     // since the start
	HandshakeOK uint64  `json:"handshakes_ok"`   // in the step
	SchedP99ms  float64 `json:"sched_p99_ms"`    // its goroutines' wait to run, in the step
	// HopP99ms: the hops it timed itself in the step (its /stats hops),
	// p99 by hop: client_to_replica of the events it read, redis of the
	// broadcasts it read from Redis.
	HopP99ms map[string]float64 `json:"hop_p99_ms,omitempty"`
}

// buildReport turns the samples and the shards' reports into the report.
func buildReport(o options, sz sizing, c *cluster, res *results, machine *benchrun.Machine) *report {
	rep := &report{Conns: o.conns, Replicas: len(c.replicas), Shards: sz.shards, SourcesPerShard: sz.sources, NginxWorkers: sz.nginxWorkers,
		OpenFilesLimit: sz.limit, Fault: o.fault, RedisShards: o.redisShards, Engine: o.engine, Client: o.client, ClientLoop: o.clientLoop, PingInterval: pingIntervalOf(o),
		StepDuration: o.stepDuration.String(), EmitInterval: o.emitInterval, PushRate: o.pushRate}
	for k := 1; k < len(res.samples); k++ {
		rep.Steps = append(rep.Steps, stepOf(k, c, res))
	}
	rep.totals(res)
	rep.Reconcile = reconcile(c, res)
	rep.Limit = closestLimit(o, sz, rep, res)
	rep.LargestHeld, rep.LargestHeldMissed = largestHeld(o.thresholds, rep.Steps)
	rep.Verdicts = verdicts(o, c, rep, res)
	rep.Thresholds = passfail.Evaluate(o.thresholds, rep.values())
	rep.Machine = machine.Summary()
	return rep
}

// stepOf is step k (from 1): the difference of samples k-1 and k, and
// the shards' step k.
func stepOf(k int, c *cluster, res *results) stepRow {
	a, b := res.samples[k-1], res.samples[k]
	win := b.at.Sub(a.at).Seconds()
	pct := func(cpu0, cpu1 float64) float64 { return 100 * (cpu1 - cpu0) / win }
	row := stepRow{Step: k, ServerActive: b.active(), Errors: map[string]int{}}
	emit, push := protocol.NewHistogram(), protocol.NewHistogram()
	emitHops, pushHops := hopMerge{}, hopMerge{}
	for _, sh := range res.shards {
		if k > len(sh.Steps) {
			continue
		}
		s := sh.Steps[k-1]
		row.Target += s.Target
		row.Held += s.Held
		row.Connecting += s.Connecting
		row.Attempts += s.Attempts
		row.Connected += s.Connected
		row.Lost += s.Lost
		row.Reconnected += s.Reconnected
		row.AcksPerS += float64(s.Acks) / s.WindowS
		row.PushesPerS += float64(s.PushesReceived) / s.WindowS
		for e, n := range s.Errors {
			row.Errors[e] += n
		}
		emit.Merge(timeline.HistogramOf(s.EmitBuckets))
		push.Merge(timeline.HistogramOf(s.PushBuckets))
		emitHops.add(s.EmitHops)
		pushHops.add(s.PushHops)
		row.ClientSchedP99ms = max(row.ClientSchedP99ms, 1000*s.ClientSchedP99S)
		row.ClientLoopLagP99ms = max(row.ClientLoopLagP99ms, 1000*s.ClientLoopLagP99S)
	}
	row.SuccessPct = sustain.Percent(row.Connected, row.Attempts)
	row.Emit, row.Push = protocol.LatencyOf(emit), protocol.LatencyOf(push)
	row.EmitHops, row.PushHops = emitHops.latencies(), pushHops.latencies()
	row.ClientCPUPct, row.ClientRSSMiB = 100*b.clients.cpuSince(a.clients)/win, b.clients.rss/(1<<20)
	row.NginxCPUPct, row.NginxRSSMiB = 100*b.nginx.cpuSince(a.nginx)/win, b.nginx.rss/(1<<20)
	for i := range b.redis {
		row.RedisCPUPct = append(row.RedisCPUPct, pct(a.redis[i].cpu, b.redis[i].cpu))
		row.RedisRSSMiB = append(row.RedisRSSMiB, b.redis[i].rss/(1<<20))
	}
	if b.all > a.all {
		row.MachinePct = 100 * float64(b.busy-a.busy) / float64(b.all-a.all)
	}
	row.MemPct = 100 * b.memUsed
	row.Fds = fdRow{Nginx: b.nginx.fds, Client: b.clients.fds}
	alive := 0
	for i, r := range c.replicas {
		rr := replicaOf(r, a.replicas[i], b.replicas[i], win, res.samples[0].replicas[i].rss)
		row.Fds.Replica = max(row.Fds.Replica, rr.Fds)
		row.MsgsPerS += rr.MsgsPerS
		if rr.Alive && !rr.NoStats {
			alive++ // the replicas whose messages the sum holds
		}
		row.Replicas = append(row.Replicas, rr)
		row.ReplicaSchedP99ms = max(row.ReplicaSchedP99ms, rr.SchedP99ms)
	}
	row.MsgsPerSPer = row.MsgsPerS / float64(max(alive, 1))
	return row
}

// hopMerge merges the shards' histograms of each hop.
type hopMerge map[string]*hdrhistogram.Histogram

func (m hopMerge) add(split map[string]protocol.Distribution) {
	for hop, h := range split {
		if m[hop] == nil {
			m[hop] = protocol.NewHistogram()
		}
		m[hop].Merge(timeline.HistogramOf(h.Histogram))
	}
}

func (m hopMerge) latencies() map[string]protocol.Latency {
	if len(m) == 0 {
		return nil
	}
	out := map[string]protocol.Latency{}
	for hop, h := range m {
		out[hop] = protocol.LatencyOf(h)
	}
	return out
}

// replicaOf is one replica's part of a step, between readings a and b;
// base is its RSS before the first connection, which the connections'
// share leaves out (else the process's own memory, spread over the few
// connections of the first step, would look like a cost that shrinks).
func replicaOf(r *replica, a, b procRead, win, base float64) replicaRow {
	rr := replicaRow{Name: r.name, Alive: b.alive, NoStats: b.alive && b.stats == nil, Fds: b.fds, Limit: r.limit,
		CPUPct: 100 * (b.cpu - a.cpu) / win, RSSMiB: b.rss / (1 << 20)}
	if !b.alive || !a.alive {
		rr.CPUPct = 0
	}
	if b.stats == nil {
		return rr
	}
	st := b.stats
	rr.Active = st.ConnectionsActive
	rr.EMFILE, rr.LeakTimers = st.AcceptErrors["EMFILE"], st.Faults["leak_timer"]
	if a.stats != nil {
		rr.MsgsPerS = float64(st.MessagesReceived+st.MessagesSent-a.stats.MessagesReceived-a.stats.MessagesSent) / win
		rr.HandshakeOK = st.Handshakes[protocol.ResultOK] - a.stats.Handshakes[protocol.ResultOK]
		d := protocol.Diff(*a.stats, *st)
		rr.SchedP99ms = 1000 * d.SchedLatency.Latency.P99
		for hop, h := range d.Hops {
			if rr.HopP99ms == nil {
				rr.HopP99ms = map[string]float64{}
			}
			rr.HopP99ms[hop] = 1000 * h.Latency.P99
		}
	}
	if rr.Active > 0 {
		rr.KiBPerConn = max(0, b.rss-base) / 1024 / float64(rr.Active)
	}
	return rr
}

// totals are the figures over every step.
func (rep *report) totals(res *results) {
	var attempts, connected int64
	emit, push := protocol.NewHistogram(), protocol.NewHistogram()
	for _, sh := range res.shards {
		for _, s := range sh.Steps {
			emit.Merge(timeline.HistogramOf(s.EmitBuckets))
			push.Merge(timeline.HistogramOf(s.PushBuckets))
		}
		for i, n := range sh.HeldPerSecond {
			for len(rep.heldPerSecond) <= i {
				rep.heldPerSecond = append(rep.heldPerSecond, 0)
			}
			rep.heldPerSecond[i] += n
		}
	}
	for _, s := range rep.Steps {
		attempts += s.Attempts
		connected += s.Connected
		rep.Lost += s.Lost
		rep.Reconnected += s.Reconnected
		rep.MemPctMax = max(rep.MemPctMax, s.MemPct)
		for _, r := range s.Replicas {
			rep.CPUPctMax = max(rep.CPUPctMax, r.CPUPct)
		}
	}
	rep.SuccessPct = sustain.Percent(connected, attempts)
	e := protocol.LatencyOf(emit)
	rep.emitAll = &e
	rep.P99ms, rep.PushP99ms = e.P99*1000, protocol.LatencyOf(push).P99*1000
	if n := len(rep.Steps); n > 0 {
		rep.MsgsPerSPerReplica = rep.Steps[n-1].MsgsPerSPer
	}
	if !res.killAt.IsZero() {
		rep.RecoverS = recovery(rep.heldPerSecond, res.killAt.Sub(res.start))
	}
}

// recovery is the seconds from the kill until the clients held as many
// connections as in the second before it; nil when they never did.
func recovery(held []int64, at time.Duration) *float64 {
	k := int(at / time.Second)
	if k < 1 || k >= len(held) {
		return nil
	}
	before := held[k-1]
	for i := k; i < len(held); i++ {
		if held[i] >= before {
			s := float64(i+1) - at.Seconds()
			return &s
		}
	}
	return nil
}

// values are the metrics -threshold reads.
func (rep *report) values() passfail.Values {
	v := passfail.Values{"success": rep.SuccessPct / 100, "msgs_per_s_per_replica": rep.MsgsPerSPerReplica,
		"cpu_pct_max": rep.CPUPctMax, "mem_pct_max": rep.MemPctMax, "lost": float64(rep.Lost)}
	if rep.emitAll != nil && rep.emitAll.Count > 0 {
		v["p99"] = rep.P99ms
	}
	if rep.PushP99ms > 0 {
		v["push_p99"] = rep.PushP99ms
	}
	return v
}

// pingIntervalOf is -ping-interval as the report shows it; empty for the
// target's default.
func pingIntervalOf(o options) string {
	if o.pingInterval == 0 {
		return ""
	}
	return o.pingInterval.String()
}

// values are the metrics -threshold reads, of one step alone.
func (s stepRow) values() passfail.Values {
	v := passfail.Values{"success": s.SuccessPct / 100, "msgs_per_s_per_replica": s.MsgsPerSPer,
		"mem_pct_max": s.MemPct, "lost": float64(s.Lost), "cpu_pct_max": 0}
	for _, r := range s.Replicas {
		v["cpu_pct_max"] = max(v["cpu_pct_max"], r.CPUPct)
	}
	if s.Emit.Count > 0 {
		v["p99"] = s.Emit.P99 * 1000
	}
	if s.Push.Count > 0 {
		v["push_p99"] = s.Push.P99 * 1000
	}
	return v
}

// largestHeld is the connections of the last step up to which every step
// met every threshold (0 when the first did not), and the thresholds the
// step after it missed.
func largestHeld(thresholds []passfail.Threshold, steps []stepRow) (conns int, missed []string) {
	for _, s := range steps {
		for _, r := range passfail.Evaluate(thresholds, s.values()) {
			// A figure a step has none of (no emit acked yet) is no miss.
			if !r.OK && r.Value != nil {
				missed = append(missed, fmt.Sprintf("%s (%.4g%s)", r.Expr, *r.Value, r.Unit))
			}
		}
		if len(missed) > 0 {
			return conns, missed
		}
		conns = s.Target
	}
	return conns, nil
}

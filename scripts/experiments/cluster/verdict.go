package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/loadgen/passfail"
	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/protocol"
)

// reconcileRow is one figure counted by both sides: the clients' sum,
// the replicas' sum, and each replica's part.
type reconcileRow struct {
	Name     string   `json:"name"`
	Client   int64    `json:"client"`
	Server   int64    `json:"server"`
	Replicas []uint64 `json:"replicas"`
	// Unread bounds what the servers' sum may miss: the connects made
	// after the reading it comes from. For the connects, those a killed
	// replica completed after its last reading: each was either lost at
	// the kill, beyond the handshaken connections that reading held, or
	// closed by its client on purpose (-churn) before. For the connections
	// held, read a moment before the clients, the handshakes the replicas
	// completed after that reading (their final /stats): a busy replica
	// may complete many in that moment. Server <= Client <= Server +
	// Unread.
	Unread int64 `json:"unread,omitempty"`
	// Connecting: the clients' connects not done when they were read; the
	// servers, read a moment before, may count some of them. Server <=
	// Client + Connecting.
	Connecting int64 `json:"connecting,omitempty"`
}

// killedHeld is at least how many of the connections the killed replica
// held at its last reading had completed their handshake: its handshakes
// less its disconnects, each of which ended at most one of them. Its
// active connections would overstate them by the connects still under
// way, whose handshakes completed after the reading.
func killedHeld(c *cluster, first []procRead) int64 {
	var base protocol.Stats
	for i, r := range c.replicas {
		if r == c.killed && first[i].stats != nil {
			base = *first[i].stats
		}
	}
	k := c.killedStats
	ok := int64(k.Handshakes[protocol.ResultOK]) - int64(base.Handshakes[protocol.ResultOK])
	return max(0, ok-(sumOf(k.Disconnects)-sumOf(base.Disconnects)))
}

func sumOf(m map[string]uint64) int64 {
	var n int64
	for _, v := range m {
		n += int64(v)
	}
	return n
}

// lastStats is each replica's last /stats: at the end, or, for the one
// killed, its reading just before the kill.
func lastStats(c *cluster, res *results) []*protocol.Stats {
	all := append(append([]sample{}, res.samples...), res.final)
	out := make([]*protocol.Stats, len(res.samples[0].replicas))
	for _, s := range all {
		for i, r := range s.replicas {
			if r.stats != nil {
				out[i] = r.stats
			}
		}
	}
	for i, r := range c.replicas {
		if c.wasKilled(r) && c.killedStats != nil {
			out[i] = c.killedStats
		}
	}
	return out
}

// reconcile puts the clients' counts of the whole run beside the
// replicas' (/stats at the end less at the start).
func reconcile(c *cluster, res *results) []reconcileRow {
	first, last := res.samples[0].replicas, lastStats(c, res)
	server := func(name string, client int64, f func(*protocol.Stats) uint64) reconcileRow {
		row := reconcileRow{Name: name, Client: client}
		for i := range c.replicas {
			var n uint64
			if last[i] != nil && first[i].stats != nil {
				n = f(last[i]) - f(first[i].stats)
			}
			row.Replicas = append(row.Replicas, n)
			row.Server += int64(n)
		}
		return row
	}
	var connected, sent, received, ever int64
	for _, sh := range res.shards {
		ever += int64(sh.Ever)
		for _, s := range sh.Steps {
			connected += s.Connected
			sent += s.Emits + s.Joins + s.PushesSent
			received += s.Acks + s.PushesReceived
		}
	}
	connects := server("connects completed (server: handshakes ok)", connected, func(s *protocol.Stats) uint64 { return s.Handshakes[protocol.ResultOK] })
	if c.killed != nil && c.killedStats != nil {
		var lost, churned int64
		for _, sh := range res.shards {
			for _, s := range sh.Steps {
				lost += s.Lost
				churned += s.Churned
			}
		}
		connects.Unread = max(0, lost-killedHeld(c, first)) + churned
	}
	rows := []reconcileRow{
		connects,
		server("events to the servers: emits, joins, pushes (server: received)", sent, func(s *protocol.Stats) uint64 { return s.MessagesReceived }),
		server("events from the servers: acks, push deliveries (server: sent)", received, func(s *protocol.Stats) uint64 { return s.MessagesSent }),
	}
	if n := len(res.samples); n > 1 {
		held := reconcileRow{Name: "connections held at the last step (server: active)"}
		for _, sh := range res.shards {
			if len(sh.Steps) == n-1 {
				held.Client += sh.Steps[n-2].Held
				held.Connecting += sh.Steps[n-2].Connecting
			}
		}
		for i, r := range res.samples[n-1].replicas {
			var a uint64
			if r.stats != nil {
				a = uint64(max(0, r.stats.ConnectionsActive))
				if last[i] != nil {
					ok := protocol.ResultOK
					held.Unread += max(0, int64(last[i].Handshakes[ok])-int64(r.stats.Handshakes[ok]))
				}
			}
			held.Replicas = append(held.Replicas, a)
			held.Server += int64(a)
		}
		rows = append(rows, held)
	}
	rows = append(rows, reconcileRow{Name: "distinct clients connected at least once (of -conns)", Client: ever, Server: -1})
	return rows
}

// limit is the resource closest to its limit at the last step.
type limit struct {
	Resource string  `json:"resource"` // fds, CPU, memory, Redis, ports
	NowPct   float64 `json:"now_pct"`
	NextPct  float64 `json:"next_pct"` // at one more step of the same size
	Detail   string  `json:"detail"`
}

// closestLimit finds, at the last step, the resource nearest its limit
// (each as a share of what it allows) and what one more step would need
// of it, growing with the connections.
func closestLimit(o options, sz sizing, rep *report, res *results) *limit {
	n := len(rep.Steps)
	if n == 0 {
		return nil
	}
	s := rep.Steps[n-1]
	grow := float64(s.Target+o.conns/o.steps) / float64(max(s.Target, 1))
	var all []limit
	add := func(res string, now float64, detail string) {
		all = append(all, limit{Resource: res, NowPct: now, NextPct: now * grow, Detail: detail})
	}
	fdsPct, who := 0.0, ""
	for _, r := range s.Replicas {
		if p := 100 * float64(r.Fds) / float64(max(r.Limit, 1)); r.Alive && p > fdsPct {
			fdsPct, who = p, fmt.Sprintf("%s: %d of %d open files", r.Name, r.Fds, r.Limit)
		}
	}
	if p := 100 * float64(s.Fds.Nginx) / float64(sz.limit); p > fdsPct {
		fdsPct, who = p, fmt.Sprintf("an nginx worker: %d of %d", s.Fds.Nginx, sz.limit)
	}
	if p := 100 * float64(s.Fds.Client) / float64(sz.limit); p > fdsPct {
		fdsPct, who = p, fmt.Sprintf("a loadgen shard: %d of %d", s.Fds.Client, sz.limit)
	}
	add("fds", fdsPct, who)
	add("CPU", s.MachinePct, fmt.Sprintf("the machine's %d cores %.0f%% busy: replicas %.0f%%, clients %.0f%%, nginx %.0f%%, Redis %.0f%% (of one core each)",
		sz.cores, s.MachinePct, sumReplicaCPU(s), s.ClientCPUPct, s.NginxCPUPct, sum(s.RedisCPUPct)))
	used0 := 100 * res.samples[0].memUsed
	all = append(all, limit{Resource: "memory", NowPct: s.MemPct, NextPct: used0 + (s.MemPct-used0)*grow,
		Detail: fmt.Sprintf("%.0f%% of the machine's memory in use (%.0f%% before the run)", s.MemPct, used0)})
	if len(s.RedisCPUPct) > 0 {
		top := slices.Max(s.RedisCPUPct)
		add("Redis", top, fmt.Sprintf("the busiest of %d Redis servers at %.0f%% of its one core", len(s.RedisCPUPct), top))
	}
	if r := portRange(); r > 0 {
		// connect() slows past the half of the range it tries first.
		per := float64(s.Target) / float64(sz.shards*max(1, sz.sources))
		add("ports", 100*per/float64(r/2), fmt.Sprintf("%.0f connections from each client address to its nginx port, of the %d ephemeral ports connect() tries first (half the range)", per, r/2))
	}
	best := slices.MaxFunc(all, func(a, b limit) int { return cmpFloat(a.NowPct, b.NowPct) })
	return &best
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

func sumReplicaCPU(s stepRow) float64 {
	t := 0.0
	for _, r := range s.Replicas {
		t += r.CPUPct
	}
	return t
}

// portRange is the size of the ephemeral port range; 0 when unknown.
func portRange() int {
	lo, hi, err := procfs.LocalPortRange()
	if err != nil {
		return 0
	}
	return hi - lo + 1
}

// verdicts say in words what limited the run and what each fault did,
// from the servers' own counters.
func verdicts(o options, c *cluster, rep *report, res *results) []string {
	var out []string
	if l := rep.Limit; l != nil {
		out = append(out, fmt.Sprintf("closest limit: %s at %.0f%% (%s); one more step of %d connections would take it to about %.0f%%",
			l.Resource, l.NowPct, l.Detail, o.conns/o.steps, l.NextPct))
	}
	out = append(out, saturation(rep)...)
	out = append(out, hopVerdicts(rep)...)
	if v := clientCostVerdict(rep); v != "" {
		out = append(out, v)
	}
	if len(o.thresholds) > 0 {
		out = append(out, heldVerdict(o, rep))
	}
	out = append(out, emfileVerdict(c, rep)...)
	out = append(out, leakVerdict(o, rep))
	out = append(out, redisVerdict(rep))
	if v := unansweredVerdict(rep); v != "" {
		out = append(out, v)
	}
	if !res.killAt.IsZero() {
		out = append(out, killVerdict(c, rep, res))
	}
	if r := res.stalled; r != nil {
		out = append(out, fmt.Sprintf("stall: %s stopped (SIGSTOP) %s into the run for %s, then went on (SIGCONT)", r.name, o.stallAt, o.stallFor))
	}
	return out
}

// clientCostVerdict says, at the last step, what a connection cost the
// load client beside what it cost the replicas, and whether the client
// or the target is the dearer: on one machine the dearer one decides how
// far a run gets.
func clientCostVerdict(rep *report) string {
	if len(rep.Steps) == 0 {
		return ""
	}
	s := rep.Steps[len(rep.Steps)-1]
	c := s.cost()
	if c.held == 0 || c.replicasCPU <= 0 || c.replicasKiB <= 0 {
		return ""
	}
	cpu, mem := c.clientCPU/c.replicasCPU, c.clientKiB/c.replicasKiB
	which := "cheaper than the replicas in CPU and memory"
	switch {
	case s.MachinePct >= busyPct:
		// Saturated cores are shared by the kernel: a share is then what a
		// process got, not what it needed.
		which = fmt.Sprintf("with the cores saturated (%.0f%% busy), so the CPU shares say how the kernel divided them more than what each needed", s.MachinePct)
	case cpu > 1 && mem > 1:
		which = "dearer than the replicas in CPU and memory: the client, not the target, limits this run"
	case cpu > 1:
		which = "dearer than the replicas in CPU: the client, not the target, limits this run's CPU"
	case mem > 1:
		which = "dearer than the replicas in memory"
	}
	return fmt.Sprintf("load client at step %d (%d held): %.2fx the replicas' CPU and %.2fx their memory per connection, %s",
		s.Step, c.held, cpu, mem, which)
}

// heldVerdict: up to which step every threshold held, step by step, and
// at which steps each held (a rate per replica holds from a step on, a
// latency up to one), so that a run where they never hold together says
// where each one stands.
func heldVerdict(o options, rep *report) string {
	together := fmt.Sprintf("together up to %d connections", rep.LargestHeld)
	switch {
	case rep.LargestHeldMissed == nil:
		together = fmt.Sprintf("together at every step, up to %d connections", rep.LargestHeld)
	case rep.LargestHeld == 0:
		together = "together at no step from the first"
	}
	if rep.LargestHeldMissed != nil && rep.LargestHeld == 0 {
		// A rate per replica holds only from some step on: say where
		// they all held, if anywhere, which is the largest N they allow.
		together += " (all " + heldAt(o.thresholds, rep.Steps) + ")"
	}
	var each []string
	for _, t := range o.thresholds {
		each = append(each, t.Expr+" "+heldAt([]passfail.Threshold{t}, rep.Steps))
	}
	return "thresholds, step by step: " + together + "; " + strings.Join(each, ", ")
}

// heldAt says at which steps' connections the thresholds all held; a
// step with no figure for one of them is not judged.
func heldAt(ts []passfail.Threshold, steps []stepRow) string {
	var at []int
	judged := 0
	for _, s := range steps {
		ok, figures := true, true
		for _, r := range passfail.Evaluate(ts, s.values()) {
			figures = figures && r.Value != nil
			ok = ok && r.OK
		}
		if !figures {
			continue // no figure at this step
		}
		judged++
		if ok {
			at = append(at, s.Target)
		}
	}
	switch {
	case judged == 0:
		return "not judged (no figure)"
	case len(at) == judged:
		return "held at every step"
	case len(at) == 0:
		return "held at no step"
	case len(at) == 1:
		return fmt.Sprintf("held at %d only", at[0])
	}
	return fmt.Sprintf("held at %d of %d steps, %d to %d connections", len(at), judged, at[0], at[len(at)-1])
}

// busyPct is the machine's CPU use from which a step counts as saturated:
// the processes then queue for the cores and every latency grows.
const busyPct = 95

// saturation says from which step the machine's cores were saturated and
// what the latency did, and what the clients' missing connects were.
func saturation(rep *report) []string {
	var out []string
	for i, s := range rep.Steps {
		if s.MachinePct < busyPct {
			continue
		}
		v := fmt.Sprintf("CPU: the machine's cores were saturated (%.0f%% busy) from step %d on (%d connections)", s.MachinePct, s.Step, s.Target)
		if i > 0 {
			p := rep.Steps[i-1]
			v += fmt.Sprintf("; the emits' p99 went from %.0f ms at step %d to %.0f ms at the last step", p.Emit.P99*1000, p.Step, rep.Steps[len(rep.Steps)-1].Emit.P99*1000)
		}
		out = append(out, v)
		break
	}
	errs := map[string]int{}
	for _, s := range rep.Steps {
		for k, n := range s.Errors {
			errs[k] += n
		}
	}
	if len(errs) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(errs)) {
			parts = append(parts, fmt.Sprintf("%d %s", errs[k], k))
		}
		v := "client errors: " + strings.Join(parts, ", ")
		if errs["connect: deadline exceeded"] > 0 {
			v += " (a connect past its deadline may still complete on the server, which then counts a handshake the client gave up on)"
		}
		out = append(out, v)
	}
	return out
}

// emfileVerdict names every replica that refused connections for want
// of descriptors (its accept_errors{EMFILE}).
func emfileVerdict(c *cluster, rep *report) []string {
	n := len(rep.Steps)
	if n == 0 {
		return nil
	}
	var out []string
	var others int64
	for i, r := range rep.Steps[n-1].Replicas {
		if r.EMFILE == 0 {
			others += r.Active
			continue
		}
		first := 0
		for _, s := range rep.Steps {
			if s.Replicas[i].EMFILE > 0 {
				first = s.Step
				break
			}
		}
		out = append(out, fmt.Sprintf("EMFILE: %s ran out of descriptors (open-files limit %d) from step %d on: it refused %d connections (its accept_errors{EMFILE}) while holding %d",
			r.Name, c.replicas[i].limit, first, r.EMFILE, r.Active))
	}
	if len(out) > 0 {
		failed := 0
		for _, s := range rep.Steps {
			failed += int(s.Attempts - s.Connected)
		}
		out = append(out, fmt.Sprintf("EMFILE: the other replicas kept serving (%d connections); the clients saw %d failed connects (nginx's retry on the next replica, proxy_next_upstream, is off in this fault; with it on, nginx would hide the refusals)", others, failed))
	}
	return out
}

// leakGrowth is the growth of RSS per active connection, last step over
// first, that the report calls a leak.
const leakGrowth = 1.25

// leakVerdict compares each replica's RSS per active connection at the
// first and the last step: with connections churning, memory that grows
// per connection held is memory kept for connections gone.
func leakVerdict(o options, rep *report) string {
	n := len(rep.Steps)
	if n < 2 {
		return "leak: one step only, nothing to compare"
	}
	first, last := rep.Steps[0], rep.Steps[n-1]
	worst, name, timers, active := 0.0, "", uint64(0), int64(0)
	var from, to float64
	fewer := 0
	for i, r := range last.Replicas {
		f := first.Replicas[i]
		if !r.Alive || f.KiBPerConn == 0 || r.KiBPerConn == 0 {
			continue
		}
		// Memory of connections gone is not given back to the system at
		// once: on a replica that lost connections, RSS per connection
		// rises without a leak.
		if r.Active < f.Active {
			fewer++
			continue
		}
		if g := r.KiBPerConn / f.KiBPerConn; g > worst {
			worst, name, from, to = g, r.Name, f.KiBPerConn, r.KiBPerConn
		}
		timers += r.LeakTimers
		active += r.Active
	}
	if name == "" && fewer > 0 {
		return fmt.Sprintf("leak: not judged: %d replicas hold fewer connections at the last step than at the first, and RSS is not given back at once when connections leave", fewer)
	}
	if name == "" {
		return "leak: no replica held connections at both the first and the last step"
	}
	// The garbage collector's slack moves the figure by up to a fifth
	// between steps (measured on runs without the fault): growth of a
	// quarter or more is more than that.
	if worst < leakGrowth {
		return fmt.Sprintf("leak: none seen: RSS per active connection (above the replica's RSS before the run) went from %.1f to %.1f KiB on %s, the most of any replica", from, to, name)
	}
	s := fmt.Sprintf("leak: RSS per active connection (above the replica's RSS before the run) grew %.1fx, from %.1f KiB at step 1 to %.1f KiB at step %d on %s",
		worst, from, to, n, name)
	if timers > 0 {
		s += fmt.Sprintf("; the replicas started %d interval timers (faults{leak_timer}) for %d connections active now: timers outlive their connections", timers, active)
	}
	if o.churn > 0 {
		s += fmt.Sprintf(" (%.0f%% of the clients left and came back at each step)", 100*o.churn)
	}
	return s
}

// redisVerdict is the Redis servers' CPU at the last step.
func redisVerdict(rep *report) string {
	s := rep.Steps[len(rep.Steps)-1]
	if len(s.RedisCPUPct) == 1 {
		return fmt.Sprintf("Redis: one server, %.1f%% of its core at the last step (%.0f room pushes/s delivered to the clients)", s.RedisCPUPct[0], s.PushesPerS)
	}
	var parts []string
	for _, p := range s.RedisCPUPct {
		parts = append(parts, fmt.Sprintf("%.1f%%", p))
	}
	return fmt.Sprintf("Redis: %d servers, the rooms spread by hash: %s of a core each (%.1f%% in all) at the last step",
		len(s.RedisCPUPct), strings.Join(parts, ", "), sum(s.RedisCPUPct))
}

// killVerdict: what the kill cost and whether everything came back,
// counted once.
func killVerdict(c *cluster, rep *report, res *results) string {
	rec := "the clients did not get back to as many connections before the end"
	if rep.RecoverS != nil {
		rec = fmt.Sprintf("back to as many connections as before in %.0f s", *rep.RecoverS)
	}
	var ever int64
	for _, r := range rep.Reconcile {
		if r.Server < 0 {
			ever = r.Client
		}
	}
	held := rep.Reconcile[len(rep.Reconcile)-2]
	twice := "nothing counted twice"
	// The servers may count the clients' connects still under way.
	if ever > int64(rep.Conns) || held.Client > held.Server+held.Unread || held.Client+held.Connecting < held.Server {
		twice = "the counts do not agree"
	}
	victim := "a replica"
	if c.killed != nil {
		victim = c.killed.name
	}
	return fmt.Sprintf("kill: %s killed %.0f s into the run; %d connections lost, %d reconnected (back-off with jitter through nginx to the others), %s; %d distinct clients of %d, the clients hold %d and the replicas %d at the last step: %s",
		victim, res.killAt.Sub(res.start).Seconds(), rep.Lost, rep.Reconnected, rec, ever, rep.Conns, held.Client, held.Server, twice)
}

// unansweredVerdict names the steps at which a running replica's /stats
// did not answer in time (a replica too busy to answer): the servers'
// columns of those steps leave it out, which a reader must not take for
// connections lost.
func unansweredVerdict(rep *report) string {
	var at []string
	for _, s := range rep.Steps {
		for _, r := range s.Replicas {
			if r.NoStats {
				at = append(at, fmt.Sprintf("%s at step %d", r.Name, s.Step))
			}
		}
	}
	if len(at) == 0 {
		return ""
	}
	return "/stats unanswered (10 s timeout): " + strings.Join(at, ", ") + "; the servers' columns of those steps leave them out"
}

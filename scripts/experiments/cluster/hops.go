package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/shared/hops"
	"github.com/knowngood/knowngood/shared/protocol"
)

// hopNames are the hops as the report's columns name them.
var hopNames = map[string]string{
	hops.ClientToReplica: "client->replica",
	hops.Replica:         "replica",
	hops.Redis:           "Redis",
	hops.ReplicaToClient: "replica->client",
}

// hopOrder is the hops a kind of message takes: an emit's ack comes back
// from the replica it went to; a push crosses Redis to the others.
func hopOrder(kind string) []string {
	if kind == "emit" {
		return []string{hops.ClientToReplica, hops.Replica, hops.ReplicaToClient}
	}
	return hops.Order
}

// hops is the step's split of one kind of message.
func (s stepRow) hops(kind string) map[string]protocol.Latency {
	if kind == "emit" {
		return s.EmitHops
	}
	return s.PushHops
}

// total is the step's latency of one kind of message.
func (s stepRow) total(kind string) protocol.Latency {
	if kind == "emit" {
		return s.Emit
	}
	return s.Push
}

// nearBusyPct: a machine this busy over a step was saturated in bursts
// within it, though not over the whole step (busyPct).
const nearBusyPct = 85

// riseMs is the p99 above which the report looks for where the time
// went: the original run's target.
const riseMs = 200

// schedShare: a client whose goroutines waited at least this share of a
// hop's p99 to run held the messages itself.
const schedShare = 0.5

// nginxBusyPct is the CPU of one nginx worker or Redis, in % of a core,
// from which it counts as the hop's queue.
const nginxBusyPct = 90

// hopVerdicts name, for each kind of message, the hop that held it at the
// first step whose p99 passed riseMs (and at the worst step), and what
// held it there: the cores when they were busy, else the part whose own
// figures say so.
func hopVerdicts(rep *report) []string {
	var out []string
	for _, kind := range []string{"emit", "push"} {
		out = append(out, hopVerdict(rep, kind)...)
	}
	return out
}

// hopVerdict explains the first step whose p99 of kind passed riseMs,
// and the worst one when it is another.
func hopVerdict(rep *report, kind string) []string {
	rose := func(s stepRow) bool { return s.total(kind).P99*1000 > riseMs && len(s.hops(kind)) > 0 }
	i := slices.IndexFunc(rep.Steps, rose)
	if i < 0 {
		return nil
	}
	out := []string{stepHopVerdict(rep, rep.Steps[i], kind)}
	worst := slices.MaxFunc(rep.Steps, func(a, b stepRow) int { return cmpFloat(a.total(kind).P99, b.total(kind).P99) })
	if worst.Step != rep.Steps[i].Step && rose(worst) {
		out = append(out, stepHopVerdict(rep, worst, kind))
	}
	return out
}

func stepHopVerdict(rep *report, s stepRow, kind string) string {
	first := rep.Steps[0]
	split := s.hops(kind)
	top := ""
	for _, hop := range hopOrder(kind) {
		if split[hop].P99 > split[top].P99 {
			top = hop
		}
	}
	if top == "" {
		return ""
	}
	v := fmt.Sprintf("latency by hop: the %s' p99 passed %d ms at step %d (%d connections): %.0f ms, from %.0f ms at step 1; the most in %s, p99 %.0f ms (%.0f ms at step 1)",
		kind+map[string]string{"emit": "s", "push": "es"}[kind], riseMs, s.Step, s.Target, s.total(kind).P99*1000, first.total(kind).P99*1000, hopNames[top], split[top].P99*1000, first.hops(kind)[top].P99*1000)
	return v + ": " + holder(rep, s, top, split[top].P99*1000)
}

// oneReplica names the replica that held a hop's messages when its own
// timing of the hop (its /stats hops) accounts for the most of the hop's
// p99 and is well above every other replica's: it read them late, as a
// replica whose loop stalls does. "" when none stands out.
func oneReplica(s stepRow, hop string, p99ms float64) string {
	if hop != hops.ClientToReplica && hop != hops.Redis {
		return ""
	}
	rows := slices.Clone(s.Replicas)
	slices.SortFunc(rows, func(a, b replicaRow) int { return cmpFloat(b.HopP99ms[hop], a.HopP99ms[hop]) })
	if len(rows) < 2 {
		return ""
	}
	top, next := rows[0], rows[1]
	if top.HopP99ms[hop] < schedShare*p99ms || top.HopP99ms[hop] < standOut*next.HopP99ms[hop] {
		return ""
	}
	return fmt.Sprintf("%s read them late: its own %s p99 %.0f ms, the next replica's %.0f ms (a replica whose loop or process stalls; its goroutines waited up to %.0f ms to run once it went on, its CPU %.0f%% of a core)",
		top.Name, hopNames[hop], top.HopP99ms[hop], next.HopP99ms[hop], top.SchedP99ms, top.CPUPct)
}

// standOut: a replica whose own timing of a hop is this many times the
// next replica's stands out.
const standOut = 3

// part is one process a hop crosses, and how long it held messages at
// most: its goroutines' wait to run (p99), or, for nginx, whether its
// workers were busy.
type part struct {
	name   string
	waitMs float64
}

// holder says what held a hop's messages at step s: the cores when they
// were busy; else the part the hop crosses whose own figures account for
// the most of the hop's p99 (its goroutines waited that long to run, or
// its workers were busy), or that none does.
func holder(rep *report, s stepRow, hop string, p99ms float64) string {
	if s.MachinePct >= busyPct {
		return fmt.Sprintf("the machine's cores were busy (%.0f%%): every process queued for them (replicas %.0f%%, clients %.0f%%, nginx %.0f%% of a core; goroutines waited up to %.0f ms to run in a client, %.0f ms in a replica; the client's event loops ran up to %.0f ms late)",
			s.MachinePct, sumReplicaCPU(s), s.ClientCPUPct, s.NginxCPUPct, s.ClientSchedP99ms, s.ReplicaSchedP99ms, s.ClientLoopLagP99ms)
	}
	idle := fmt.Sprintf("no resource at its limit (cores %.0f%% busy)", s.MachinePct)
	if s.MachinePct >= nearBusyPct {
		idle = fmt.Sprintf("the cores nearly saturated (%.0f%% busy over the step: in its bursts every process queued for them)", s.MachinePct)
	}
	nginxPerWorker := s.NginxCPUPct / float64(max(rep.NginxWorkers, 1))
	nginx := part{fmt.Sprintf("nginx (its %d workers at %.0f%% of a core each)", rep.NginxWorkers, nginxPerWorker), 0}
	if nginxPerWorker >= nginxBusyPct {
		nginx.waitMs = p99ms // a worker that busy queues all it carries
	}
	client := func(side string) part {
		if s.ClientLoopLagP99ms > s.ClientSchedP99ms {
			return part{fmt.Sprintf("the load client's %s (its event loops ran their work up to %.0f ms late, p99)", side, s.ClientLoopLagP99ms), s.ClientLoopLagP99ms}
		}
		return part{fmt.Sprintf("the load client's %s (its goroutines waited up to %.0f ms to run, p99)", side, s.ClientSchedP99ms), s.ClientSchedP99ms}
	}
	replica := func(side string) part {
		return part{fmt.Sprintf("a replica's %s (its goroutines waited up to %.0f ms to run, p99)", side, s.ReplicaSchedP99ms), s.ReplicaSchedP99ms}
	}
	if v := oneReplica(s, hop, p99ms); v != "" {
		return idle + "; " + v
	}
	var parts []part
	switch hop {
	case hops.Replica:
		return idle + "; inside the replica, between its handler and handing the answer over (a -fault-delay, or a handler that waits)"
	case hops.ClientToReplica:
		parts = []part{client("writers"), nginx, replica("read side, before the handler")}
	case hops.ReplicaToClient:
		parts = []part{replica("writers"), nginx, client("readers")}
	case hops.Redis:
		redisPct := slices.Max(append([]float64{0}, s.RedisCPUPct...))
		r := part{fmt.Sprintf("Redis (%.0f%% of its core)", redisPct), 0}
		if redisPct >= nginxBusyPct {
			r.waitMs = p99ms
		}
		parts = []part{replica("publisher or subscriber"), r}
	}
	top := slices.MaxFunc(parts, func(a, b part) int { return cmpFloat(a.waitMs, b.waitMs) })
	if top.waitMs >= schedShare*p99ms {
		return idle + "; " + top.name
	}
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	return idle + "; none of the parts it crosses accounts for half of it by its own figures: " + strings.Join(names, ", ") +
		"; the rest waited in a queue none of them times: a socket's buffer, or behind other work in one of them (a subscriber delivers one broadcast after another)"
}

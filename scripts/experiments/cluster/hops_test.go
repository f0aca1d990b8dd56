package main

import (
	"strings"
	"testing"

	"github.com/knowngood/knowngood/shared/hops"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestHopVerdict: the hop with the most of a risen p99 is named, with
// what held it: the cores when busy, else the part whose own figures
// account for it, else none.
func TestHopVerdict(t *testing.T) {
	t.Parallel()
	lat := func(p99ms float64) protocol.Latency { return protocol.Latency{Count: 100, P99: p99ms / 1000} }
	calm := stepRow{Step: 1, Target: 1000, Emit: lat(5), EmitHops: map[string]protocol.Latency{hops.ClientToReplica: lat(2)}}
	risen := func(hop string, tweak func(*stepRow)) stepRow {
		s := stepRow{Step: 2, Target: 2000, Emit: lat(900), MachinePct: 60, NginxCPUPct: 30,
			EmitHops: map[string]protocol.Latency{hops.ClientToReplica: lat(10), hops.Replica: lat(1), hops.ReplicaToClient: lat(10)},
			Replicas: []replicaRow{{Name: "replica1", HopP99ms: map[string]float64{hops.ClientToReplica: 10}},
				{Name: "replica2", HopP99ms: map[string]float64{hops.ClientToReplica: 12}}}}
		s.EmitHops[hop] = lat(800)
		if tweak != nil {
			tweak(&s)
		}
		return s
	}
	for _, c := range []struct {
		name string
		step stepRow
		want []string
	}{
		{"cores busy", risen(hops.ReplicaToClient, func(s *stepRow) { s.MachinePct = 99; s.ClientSchedP99ms = 700 }),
			[]string{"the most in replica->client, p99 800 ms", "cores were busy (99%)"}},
		{"the client's readers", risen(hops.ReplicaToClient, func(s *stepRow) { s.ClientSchedP99ms = 600 }),
			[]string{"no resource at its limit (cores 60% busy)", "the load client's readers"}},
		{"the client's event loop", risen(hops.ReplicaToClient, func(s *stepRow) { s.ClientSchedP99ms = 5; s.ClientLoopLagP99ms = 650 }),
			[]string{"the load client's readers (its event loops ran their work up to 650 ms late, p99)"}},
		{"a replica's writers", risen(hops.ReplicaToClient, func(s *stepRow) { s.ReplicaSchedP99ms = 500; s.ClientSchedP99ms = 50 }),
			[]string{"a replica's writers"}},
		{"nginx", risen(hops.ClientToReplica, func(s *stepRow) { s.NginxCPUPct = 280 }),
			[]string{"the most in client->replica", "nginx (its 3 workers at 93% of a core each)"}},
		{"one replica stalled", risen(hops.ClientToReplica, func(s *stepRow) { s.Replicas[1].HopP99ms[hops.ClientToReplica] = 790 }),
			[]string{"replica2 read them late: its own client->replica p99 790 ms, the next replica's 10 ms"}},
		{"none", risen(hops.ClientToReplica, nil),
			[]string{"none of the parts it crosses accounts for half of it", "a queue none of them times"}},
	} {
		rep := &report{NginxWorkers: 3, Steps: []stepRow{calm, c.step}}
		got := strings.Join(hopVerdicts(rep), "\n")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want %q", c.name, got, w)
			}
		}
	}
	if got := hopVerdicts(&report{Steps: []stepRow{calm}}); got != nil {
		t.Errorf("no step rose: %q", got)
	}
}

// TestLargestHeld: the last step up to which every threshold held; a
// step without a figure (no emit acked yet) misses nothing.
func TestLargestHeld(t *testing.T) {
	t.Parallel()
	th, err := parseFlags([]string{"-threshold", "p99<=200ms", "-threshold", "success>=99%"})
	if err != nil {
		t.Fatal(err)
	}
	step := func(target int, p99ms float64, success float64) stepRow {
		return stepRow{Target: target, SuccessPct: success, Emit: protocol.Latency{Count: 1, P99: p99ms / 1000}}
	}
	noEmits := stepRow{Target: 1000, SuccessPct: 100}
	n, missed := largestHeld(th.thresholds, []stepRow{noEmits, step(2000, 100, 100), step(3000, 300, 100), step(4000, 100, 100)})
	if n != 2000 || len(missed) != 1 || missed[0] != "p99<=200ms (300ms)" {
		t.Errorf("largest %d, missed %q; want 2000 and p99<=200ms (300ms)", n, missed)
	}
	if n, missed := largestHeld(th.thresholds, []stepRow{step(1000, 100, 50)}); n != 0 || len(missed) != 1 {
		t.Errorf("the first step failed: largest %d, missed %q", n, missed)
	}
	rep := &report{Steps: []stepRow{step(1000, 100, 50), step(2000, 100, 100), step(3000, 300, 100)}}
	rep.LargestHeld, rep.LargestHeldMissed = largestHeld(th.thresholds, rep.Steps)
	want := "thresholds, step by step: together at no step from the first (all held at 2000 only); p99<=200ms held at 2 of 3 steps, 1000 to 2000 connections, success>=99% held at 2 of 3 steps, 2000 to 3000 connections"
	if got := heldVerdict(th, rep); got != want {
		t.Errorf("heldVerdict:\n%s\nwant\n%s", got, want)
	}
}

package scenario

import (
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

func part(scenario string, i, n int, sent int64, admin string, reps ...replicas.Replica) *ShardPart {
	return &ShardPart{Scenario: scenario, Shard: Shard{I: i, N: n}, Admin: admin, Replicas: reps,
		Verdict: verdict.Run{Attempts: 2, Connected: 2, Sent: sent, Received: sent, ClientCPU: 0.5, Cores: 2}}
}

func TestMergeShardsRefuses(t *testing.T) {
	names := []string{"a.json", "b.json", "c.json"}
	for _, c := range []struct {
		name  string
		parts []*ShardPart
		want  string
	}{
		{"not sharded", []*ShardPart{part("echo", 1, 2, 1, ""), nil}, "b.json is not a sharded report: run each shard with -shard I/N"},
		{"mixed", []*ShardPart{part("echo", 1, 2, 1, ""), part("handshake", 2, 2, 1, "")}, "mixed scenarios: a.json is echo, b.json is handshake"},
		{"split", []*ShardPart{part("echo", 1, 2, 1, ""), part("echo", 2, 3, 1, "")}, "a.json is shard 1/2, b.json is shard 2/3: not the same split"},
		{"twice", []*ShardPart{part("echo", 1, 2, 1, ""), part("echo", 1, 2, 1, "")}, "shard 1/2 is given twice: a.json and b.json"},
		{"missing", []*ShardPart{part("echo", 1, 3, 1, ""), part("echo", 3, 3, 1, "")}, "shard 2/3 missing"},
		{"admin", []*ShardPart{part("echo", 1, 2, 1, "http://a"), part("echo", 2, 2, 1, "http://b")}, "every shard needs the same -admin"},
		{"none", nil, "no reports"},
	} {
		_, err := MergeShards(names[:len(c.parts)], c.parts)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line with %q", c.name, err, c.want)
		}
	}
}

// TestMergeShards: the counts add up, and each replica's window runs from
// its earliest read before to its latest read after, whichever shard took
// them.
func TestMergeShards(t *testing.T) {
	at := func(uptime float64, received uint64) *protocol.Stats {
		return &protocol.Stats{Variant: "echo-gorilla", UptimeSeconds: uptime, MessagesReceived: received, MessagesSent: received}
	}
	a1 := replicas.Replica{Admin: "http://a", Before: at(10, 100), After: at(20, 150)}
	b1 := replicas.Replica{Admin: "http://b", Before: at(10, 0), After: at(20, 0)}
	a2 := replicas.Replica{Admin: "http://a", Before: at(12, 120), After: at(18, 140)}
	b2 := replicas.Replica{Admin: "http://b", Before: at(11, 0), After: at(25, 70)}
	m, err := MergeShards([]string{"2.json", "1.json"}, []*ShardPart{
		part("echo", 2, 2, 30, "http://a,http://b", a2, b2), part("echo", 1, 2, 90, "http://a,http://b", a1, b1)})
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Verdict; v.Sent != 120 || v.Received != 120 || v.Attempts != 4 || v.ClientCPU != 1 {
		t.Errorf("merged counts %+v", v)
	}
	if len(m.Replicas) != 2 || m.Replicas[0].Diff.MessagesReceived != 50 || m.Replicas[1].Diff.MessagesReceived != 70 {
		t.Fatalf("merged replicas %+v", m.Replicas)
	}
	if s := replicas.Total(m.Replicas); s.MessagesReceived != 120 {
		t.Errorf("total received %d, want 120", s.MessagesReceived)
	}
	m.Verdict.Attempts = 0 // messages only
	vs := m.Judge(-1)
	if len(vs) != 1 || vs[0].Text != "client and server agree on the messages: the client sent 120, the server received 120; the server sent 120, the client counted 120 (counts of the whole run, through the last close)" {
		t.Errorf("verdicts %+v", vs)
	}
	// A count one shard did not keep is not kept for the whole run.
	p1, p2 := part("echo", 1, 2, 5, ""), part("echo", 2, 2, -1, "")
	if m, err := MergeShards([]string{"1", "2"}, []*ShardPart{p1, p2}); err != nil || m.Verdict.Sent != -1 {
		t.Errorf("sent with one unknown: %+v, %v", m, err)
	}
}

// TestMergeShardsUnits: the merged run keeps the shards' unit (raw TCP)
// and adds up their HTTP answers, so that the merged verdicts compare
// what the shards' did.
func TestMergeShardsUnits(t *testing.T) {
	a, b := part("conns", 1, 2, -1, ""), part("conns", 2, 2, -1, "")
	for _, p := range []*ShardPart{a, b} {
		p.Verdict.Unit, p.Verdict.Answered = verdict.UnitTCP, 3
	}
	m, err := MergeShards([]string{"a.json", "b.json"}, []*ShardPart{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Verdict; v.Unit != verdict.UnitTCP || v.Answered != 6 {
		t.Errorf("merged unit %q, answered %d; want tcp, 6", v.Unit, v.Answered)
	}
}

// TestGathered: each URL once, in order; the errors, the samples and the
// latency added up; each server error after its file's name; a shard of
// other flags, or one that counted without a histogram, refused.
func TestGathered(t *testing.T) {
	lat := protocol.NewHistogram()
	lat.RecordValue(1500)
	buckets := protocol.Buckets(lat)
	g := Gathered{Flags: "-mode"}
	for i, s := range []ShardFigures{
		{Flags: "sync", URL: "ws://h:1/", Samples: []timeline.Sample{{Second: 0, Count: 2}}, Errors: map[string]tally.Count{"refused": {Count: 1}}, Counted: true, Latency: buckets},
		{Flags: "sync", URL: "ws://h:2/", Samples: []timeline.Sample{{Second: 0, Count: 3}}, Errors: map[string]tally.Count{"refused": {Count: 2}}, ServerError: "timeout"},
		{Flags: "sync", URL: "ws://h:1/"},
	} {
		if err := g.Add(string(rune('a'+i))+".json", s); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Add("d.json", ShardFigures{Flags: "rate"}); err == nil || !strings.Contains(err.Error(), "a.json and d.json ran different flags (-mode)") {
		t.Errorf("other flags: %v", err)
	}
	if err := g.Add("e.json", ShardFigures{Flags: "sync", Counted: true}); err == nil || !strings.Contains(err.Error(), "e.json has no latency_histogram") {
		t.Errorf("no histogram: %v", err)
	}
	if got := g.Latency().TotalCount(); got != 1 {
		t.Errorf("latency count %d, want 1", got)
	}
	if got := g.URL(); got != "ws://h:1/,ws://h:2/" {
		t.Errorf("URL %q", got)
	}
	if got := g.Errors()["refused"].Count; got != 3 {
		t.Errorf("refused %d, want 3", got)
	}
	if s := g.Samples(); len(s) != 1 || s[0].Count != 5 {
		t.Errorf("samples %+v", s)
	}
	if got := g.ServerError(); got != "b.json: timeout" {
		t.Errorf("server error %q", got)
	}
}

// TestShardPartEnds: the reads that bracket the run, summed over the
// replicas; the replicas' parts only of several; the CPU between the
// reads, or -1 without them.
func TestShardPartEnds(t *testing.T) {
	at := func(cpu float64, received uint64) *protocol.Stats {
		return &protocol.Stats{Variant: "echo-gorilla", CPUSeconds: cpu, MessagesReceived: received}
	}
	one := &ShardPart{Replicas: []replicas.Replica{{Admin: "http://a", Before: at(1, 10), After: at(3, 40)}}}
	before, after, ok := one.Ends()
	if !ok || after.Stats.MessagesReceived-before.Stats.MessagesReceived != 30 || one.ServerCPU() != 2 || one.Parts() != nil {
		t.Errorf("one replica: %v %+v %+v, cpu %v, parts %v", ok, before, after, one.ServerCPU(), one.Parts())
	}
	two := &ShardPart{Replicas: append(one.Replicas, replicas.Replica{Admin: "http://b", Before: at(2, 0), After: at(3, 5)})}
	if two.ServerCPU() != 3 || len(two.Parts()) != 2 {
		t.Errorf("two replicas: cpu %v, parts %v", two.ServerCPU(), two.Parts())
	}
	if _, _, ok := (&ShardPart{}).Ends(); ok || (&ShardPart{}).ServerCPU() != -1 {
		t.Error("no replicas: ends, or a CPU")
	}
}

// TestReadShards: the shards' reports decoded, their parts merged and
// their figures gathered; a report of other flags refused.
func TestReadShards(t *testing.T) {
	type report struct {
		Shard *ShardPart `json:"shard"`
		Mode  string     `json:"mode"`
	}
	figures := func(r *report) ShardFigures { return ShardFigures{Part: r.Shard, Flags: r.Mode, URL: "ws://h:1/"} }
	shard := func(i int, mode string) []byte {
		return []byte(`{"mode":"` + mode + `","shard":{"scenario":"echo","shard":{"index":` + string(rune('0'+i)) + `,"count":2}}}`)
	}
	names := []string{"1.json", "2.json"}
	reps, whole, g, err := ReadShards(names, [][]byte{shard(1, "sync"), shard(2, "sync")}, "an echo", "-mode", figures)
	if err != nil || len(reps) != 2 || whole.Scenario != "echo" || g.URL() != "ws://h:1/" {
		t.Fatalf("ReadShards: %v, %d reports, %+v", err, len(reps), whole)
	}
	if _, _, _, err := ReadShards(names, [][]byte{shard(1, "sync"), shard(2, "rate")}, "an echo", "-mode", figures); err == nil ||
		!strings.Contains(err.Error(), "ran different flags (-mode)") {
		t.Errorf("other flags: %v", err)
	}
}

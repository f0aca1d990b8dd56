package verdict_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestReplicas: on the sum over several replicas, a loss is placed on
// the replica that counted it, or said to be visible only in the sum; a
// replica without figures makes the view partial.
func TestReplicas(t *testing.T) {
	part := func(admin string, d protocol.Stats) replicas.Replica { return replicas.Replica{Admin: admin, Diff: &d} }
	clean := protocol.Stats{MessagesReceived: 50, MessagesSent: 50}
	drops := protocol.Stats{MessagesReceived: 50, MessagesSent: 40, Faults: map[string]uint64{"drop": 10}}
	judge := func(sent, received int64, sum protocol.Stats, parts ...replicas.Replica) []verdict.Verdict {
		return verdict.Judge(verdict.Run{Sent: sent, Received: received, ClientCPU: -1, Server: &sum, Replicas: parts})
	}
	find := func(vs []verdict.Verdict, kind string) string {
		if i := slices.Index(kinds(vs), kind); i >= 0 {
			return vs[i].Text
		}
		t.Errorf("no %s verdict in %+v", kind, vs)
		return ""
	}

	vs := judge(100, 90, protocol.Stats{MessagesReceived: 100, MessagesSent: 90, Faults: map[string]uint64{"drop": 10}},
		part("http://a", clean), part("http://b", drops))
	if text := find(vs, verdict.Faults); !strings.HasSuffix(text, "(10 on replica http://b)") {
		t.Errorf("faults: %q", text)
	}

	vs = judge(120, -1, protocol.Stats{MessagesReceived: 100, Faults: map[string]uint64{"drop": 10}}, part("http://a", clean), part("http://b", drops))
	if text := find(vs, verdict.NotDelivered); !strings.Contains(text, "20 never reached it; replica http://b counted faults drop 10") {
		t.Errorf("not delivered: %q", text)
	}
	closed := protocol.Stats{MessagesReceived: 50, Disconnects: map[string]uint64{"1000": 5, "1006": 2, "ping timeout": 1}}
	vs = judge(120, -1, protocol.Stats{MessagesReceived: 100}, part("http://a", clean), part("http://b", closed))
	if text := find(vs, verdict.NotDelivered); !strings.HasSuffix(text, "; replica http://b counted abnormal disconnects 1006 2, ping timeout 1") {
		t.Errorf("not delivered, abnormal closes: %q", text)
	}
	vs = judge(120, -1, protocol.Stats{MessagesReceived: 100}, part("http://a", clean), part("http://b", clean))
	if text := find(vs, verdict.NotDelivered); !strings.HasSuffix(text, "no replica counted it: the loss can be seen only in the sum over the replicas") {
		t.Errorf("not delivered, counted nowhere: %q", text)
	}

	down := replicas.Replica{Admin: "http://c", Error: "after the run: connection refused"}
	vs = judge(150, -1, protocol.Stats{MessagesReceived: 100}, part("http://a", clean), part("http://b", clean), down)
	if vs[0].Kind != verdict.PartialView || !strings.Contains(vs[0].Text, "no /stats from replica http://c (after the run: connection refused); the figures are the sum over the other 2 of 3 replicas") {
		t.Errorf("first verdict %+v, want partial naming http://c", vs[0])
	}
	if text := find(vs, verdict.NotDelivered); !strings.Contains(text, "it may be on replica http://c, whose figures are missing") {
		t.Errorf("not delivered, partial: %q", text)
	}

	// A single process says what it always said.
	vs = judge(100, 90, protocol.Stats{MessagesReceived: 100, MessagesSent: 90, Faults: map[string]uint64{"drop": 10}}, part("http://a", drops))
	if text := find(vs, verdict.Faults); strings.Contains(text, "replica") {
		t.Errorf("one replica: %q", text)
	}
	// A shard judges no counts.
	vs = verdict.Judge(verdict.Run{Sent: 100, Received: 10, ClientCPU: -1, Server: &clean, Shard: "1/2"})
	if k := kinds(vs); !slices.Equal(k, []string{verdict.Sharded}) {
		t.Errorf("shard: %v", k)
	}
}

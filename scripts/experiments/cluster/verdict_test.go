package main

import (
	"testing"

	"github.com/knowngood/knowngood/loadgen/sustain"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestReconcileKilled: a replica killed while clients were connecting
// completed connects after its last reading; the servers' sum misses them,
// and the row bounds how many.
func TestReconcileKilled(t *testing.T) {
	t.Parallel()
	stats := func(ok uint64, active int64) *protocol.Stats {
		return &protocol.Stats{Handshakes: map[string]uint64{protocol.ResultOK: ok}, ConnectionsActive: active}
	}
	victim, other := &replica{name: "replica1"}, &replica{name: "replica2"}
	start := sample{replicas: []procRead{{stats: stats(0, 0)}, {stats: stats(0, 0)}}}
	res := &results{
		samples: []sample{start, {replicas: []procRead{{stats: stats(40, 40)}, {stats: stats(100, 100)}}}},
		// The victim completed 66 connects and lost them all at the kill;
		// they reconnected to replica2.
		final:  sample{replicas: []procRead{{}, {stats: stats(166, 166)}}},
		shards: []*sustain.Report{{Steps: []sustain.Step{{Connected: 100 + 66 + 66, Lost: 66}, {Connected: 0, Held: 166}}}},
	}
	for _, c := range []struct {
		name       string
		killed     *protocol.Stats
		wantServer int64
		wantUnread int64
	}{
		{"read before its last connects", stats(63, 63), 229, 3},
		{"read after them", stats(66, 66), 232, 0},
		// 63 connections, 2 of them still in their handshake: 5 came after.
		{"read inside two handshakes", stats(61, 63), 227, 5},
	} {
		cl := &cluster{replicas: []*replica{victim, other}, killed: victim, killedStats: c.killed}
		row := reconcile(cl, res)[0]
		if row.Client != 232 || row.Server != c.wantServer || row.Unread != c.wantUnread {
			t.Errorf("%s: connects client %d, server %d, unread %d; want 232, %d, %d", c.name, row.Client, row.Server, row.Unread, c.wantServer, c.wantUnread)
		}
	}
}

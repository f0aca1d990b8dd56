package main

import (
	"testing"

	"github.com/knowngood/knowngood/loadgen/sustain"
	"github.com/knowngood/knowngood/shared/protocol"
)

// stats is a replica's /stats with ok handshakes and active connections.
func stats(ok uint64, active int64) *protocol.Stats {
	return &protocol.Stats{Handshakes: map[string]uint64{protocol.ResultOK: ok}, ConnectionsActive: active}
}

// TestReconcileKilled: a replica killed while clients were connecting
// completed connects after its last reading; the servers' sum misses them,
// and the row bounds how many.
func TestReconcileKilled(t *testing.T) {
	t.Parallel()
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

// TestReconcileHeldAfterTheReading: the replicas are read a moment before
// the clients count the connections they hold; a busy replica that
// completed handshakes in that moment is short at the reading, and the
// row bounds by how many from its final /stats.
func TestReconcileHeldAfterTheReading(t *testing.T) {
	t.Parallel()
	start := sample{replicas: []procRead{{stats: stats(0, 0)}, {stats: stats(0, 0)}}}
	atReading := sample{replicas: []procRead{{stats: stats(111, 111)}, {stats: stats(150, 150)}}}
	shards := []*sustain.Report{{Steps: []sustain.Step{{Connected: 300, Held: 300}}}}
	cl := &cluster{replicas: []*replica{{name: "replica1"}, {name: "replica2"}}}
	for _, c := range []struct {
		name       string
		finalOK    uint64 // replica1's handshakes once the clients left
		wantUnread int64
	}{
		{"39 completed after the reading", 150, 39},
		{"none after it: 39 connections the servers do not hold", 111, 0},
	} {
		res := &results{samples: []sample{start, atReading}, shards: shards,
			final: sample{replicas: []procRead{{stats: stats(c.finalOK, 0)}, {stats: stats(150, 0)}}}}
		rows := reconcile(cl, res)
		held := rows[len(rows)-2]
		if held.Client != 300 || held.Server != 261 || held.Unread != c.wantUnread {
			t.Errorf("%s: held client %d, server %d, unread %d; want 300, 261, %d", c.name, held.Client, held.Server, held.Unread, c.wantUnread)
		}
	}
}

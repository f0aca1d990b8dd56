package scenario

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/protocol"
)

// opened holds once n connections were opened since before.
func opened(n uint64) func(before, now protocol.Stats) bool {
	return func(before, now protocol.Stats) bool { return now.ConnectionsTotal-before.ConnectionsTotal >= n }
}

// TestAwait: Await returns the first read on which its condition holds;
// when none does within the wait, the last read; without a good before,
// nothing, and without reading.
func TestAwait(t *testing.T) {
	t.Parallel()
	fake, admin := startFake(t,
		`{"variant":"echo-test","connections_total":2}`,
		`{"variant":"echo-test","connections_total":3}`,
		`{"variant":"echo-test","connections_total":5}`,
		`{"variant":"echo-test","connections_total":9}`)
	ctx := context.Background()
	target := Open(ctx, admin)
	defer target.Close()
	before := target.Snapshot(ctx)
	if got := target.Await(ctx, before, 10*time.Second, opened(3)); !got.OK() || got.Stats.ConnectionsTotal != 5 || fake.statsReads() != 3 {
		t.Errorf("opened(3): %+v after %d reads; want the read of 5, the third", got, fake.statsReads())
	}
	if got := target.Await(ctx, before, time.Second, opened(100)); !got.OK() || got.Stats.ConnectionsTotal != 9 {
		t.Errorf("opened(100): %+v; want the last read, of 9", got)
	}
	reads := fake.statsReads()
	for _, bad := range []*Snapshot{nil, {Err: errors.New("refused")}} {
		if got := target.Await(ctx, bad, time.Second, opened(0)); got != nil {
			t.Errorf("before %+v: %+v, want nil", bad, got)
		}
	}
	if fake.statsReads() != reads {
		t.Errorf("%d reads without a good before", fake.statsReads()-reads)
	}
}

// TestAwaitReplicas: of several replicas, the condition is taken over the
// sum of those that answered before and now.
func TestAwaitReplicas(t *testing.T) {
	t.Parallel()
	_, a := startFake(t, `{"variant":"echo-test","connections_total":1}`, `{"variant":"echo-test","connections_total":4}`)
	_, b := startFake(t, `{"variant":"echo-test","connections_total":2}`, `{"variant":"echo-test","connections_total":3}`)
	ctx := context.Background()
	target := Open(ctx, a+","+b)
	defer target.Close()
	before := target.Snapshot(ctx)
	got := target.Await(ctx, before, 10*time.Second, opened(4))
	if b, a := Pair(before, got); !a.OK() || a.Stats.ConnectionsTotal-b.Stats.ConnectionsTotal != 4 || len(got.Reads) != 2 {
		t.Errorf("before %+v, after %+v; want 4 opened over both replicas", before, got)
	}
}

// TestOpenDNS: a dns+ admin stands for the addresses its name resolves
// to, each read as a replica of its own; a name that does not resolve
// makes every read fail with why, and nothing is read.
func TestOpenDNS(t *testing.T) {
	t.Parallel()
	_, admin := startFake(t, `{"variant":"echo-test","connections_total":7}`)
	ctx := context.Background()
	target := Open(ctx, "dns+"+admin)
	defer target.Close()
	if target.Admin != admin {
		t.Errorf("Admin %q, want %q: an address resolves to itself", target.Admin, admin)
	}
	if got := target.Snapshot(ctx); !got.OK() || got.Stats.ConnectionsTotal != 7 {
		t.Errorf("read %+v, want the fake's 7", got)
	}

	bad := Open(ctx, "dns+http://no-such-replica.invalid:9100")
	defer bad.Close()
	got := bad.Snapshot(ctx)
	if got.OK() || !strings.Contains(got.Err.Error(), "no-such-replica.invalid") {
		t.Errorf("read of a name that does not resolve: %+v, want an error that names it", got)
	}
	if err := bad.FreeOSMemory(ctx); err == nil {
		t.Error("FreeOSMemory of a name that does not resolve: no error")
	}
}

// TestOpenDNSTwice: a dns+ name that resolves to an admin listener also
// given would count that replica twice: every read fails, and says why.
func TestOpenDNSTwice(t *testing.T) {
	t.Parallel()
	_, admin := startFake(t, `{"variant":"echo-test"}`)
	target := Open(context.Background(), admin+",dns+"+admin)
	defer target.Close()
	if got := target.Snapshot(context.Background()); got.OK() || !strings.Contains(got.Err.Error(), "given twice") {
		t.Errorf("read %+v, want an error that says the replica is given twice", got)
	}
}

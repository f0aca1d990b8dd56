package scenario

import (
	"context"
	"errors"
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

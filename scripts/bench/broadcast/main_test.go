package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/broadcast"
	"github.com/knowngood/knowngood/shared/protocol"
)

// gnet's package-level worker pool, started by importing loadgen's
// broadcast client, runs from init on.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

// TestWriteTables checks the tables' ratios against the rows they come
// from: a target at 1.2x the floor's CPU per delivery and 0.6x Node's,
// a target that did not take every subscriber, and a target that failed.
func TestWriteTables(t *testing.T) {
	gnetName, gorillaName := broadcastOn("gnet"), broadcastOn("gorilla")
	if gnetName == "" || gorillaName == "" {
		t.Fatalf("broadcastOn: gnet %q, gorilla %q; want the catalog's broadcast variants", gnetName, gorillaName)
	}
	rep := func(connected int, received uint64, p99 float64) *broadcast.Report {
		return &broadcast.Report{Connected: connected, Received: received, Latency: &protocol.Latency{P50: p99 / 2, P99: p99}}
	}
	const n = 100
	rows := []row{
		{target: floorTarget, n: n, mode: "push", rep: rep(n, 1000, 0.010), cpu: 0.010, accept: time.Second},
		{target: nodeTarget, n: n, mode: "push", rep: rep(n, 1000, 0.020), cpu: 0.020, accept: time.Second},
		{target: gnetName, n: n, mode: "push", rep: rep(n, 1000, 0.010), cpu: 0.012, accept: time.Second},
		{target: gorillaName, n: n, mode: "push", rep: rep(n-1, 1000, 0.010), cpu: 0.030, accept: 2 * time.Second},
		{target: "broadcast-coder", n: n, mode: "push", err: errors.New("would not start")},
		{target: gnetName, n: n, mode: "broadcast", rep: rep(n, 500, 0.010), cpu: 0.010},
	}
	var b strings.Builder
	writeTables(&b, options{subscribers: []int{n}, senders: 2, rate: 10, duration: time.Second, timeout: 5 * time.Second}, rows)
	out := b.String()
	for _, want := range []string{
		"| " + gnetName + " | 100 | 100 | 1.0 | 1000 | 0 | 12.0 | 1.20 (<= 1.5: met) | 0.60 (<= 0.5: **not met**) |",
		"| " + gorillaName + " | 100 | **99 of 100** within 5s |",
		"| broadcast-coder | 100 | error: would not start |",
		"Accepting 100 subscribers: " + gnetName + " 1.0 s, " + gorillaName + " 2.0 s: gnet/gorilla 0.50 (<= 1: met).",
		"Broadcast mode",
		"| " + gnetName + " | 100 | 500 | 0 | 0 | 20.0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
}

package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/scripts/internal/benchrun/benchruntest"
	"github.com/knowngood/knowngood/servers/variants"
)

func TestParseFlags(t *testing.T) {
	o := benchruntest.Flags(t, parseFlags, []string{"-n", "-1"}, []string{"-batch", "0"}, []string{"-hold", "-1s"}, []string{"-variants", "nope"})
	if o.n != 0 || o.batch != 1000 || o.hold != 5*time.Second || !strings.Contains(strings.Join(o.variants, ","), broadcastGnet) {
		t.Errorf("defaults: %+v", o)
	}
	if o, err := parseFlags([]string{"-variants", benchrun.GnetFloor + "," + broadcastGnet, "-n", "10"}); err != nil || o.n != 10 || len(o.variants) != 2 {
		t.Errorf("-variants, -n: %+v, %v", o, err)
	}
}

// TestTables: the goal by library, the floor's ratio, and a failed row.
func TestTables(t *testing.T) {
	rep := func(perConn float64) *conns.Report {
		before, after := 10.0*(1<<20), 10.0*(1<<20)+100*perConn
		r := &conns.Report{Held: 100, Established: 100, EstablishSeconds: 2}
		r.Server = &conns.ServerView{RSSBefore: &before, RSSAfter: &after, BytesPerConnection: &perConn}
		return r
	}
	rows := []row{
		{variant: benchrun.GnetFloor, n: 100, limit: "-n", rep: rep(512)},
		{variant: broadcastGnet, n: 100, limit: "-n", rep: rep(1024), threads: 3},
		{variant: node, n: 100, err: errors.New("would not start")},
		{variant: sioNativeGnet, n: 100, limit: "-n", rep: rep(3 * 1024)},
		{variant: sioZishang520, n: 100, limit: "-n", rep: rep(40 * 1024)},
		{variant: benchrun.FloorOf(variants.Nbio), n: 100, limit: "-n", rep: rep(2 * 1024)},
		{variant: "echo-nbio", n: 100, limit: "-n", rep: rep(8 * 1024)},
	}
	var b strings.Builder
	o := options{batch: 10, sources: "127.0.0.1", hold: time.Second}
	writeTable(&b, o, rows)
	writeFloorRatios(&b, rows)
	out := b.String()
	for _, want := range []string{
		"| gnet floor (minimal gnet echo) | 100 | 100 | 0 | 2.00 | 50 | 10.0 | 10.0 | 0.50 | - | - |",
		"| " + broadcastGnet + " | 100 | 100 | 0 | 2.00 | 50 | 10.0 | 10.1 | 1.00 | 1 | yes | - | - | 3 | -n |",
		"| node ws | 100 | error: would not start |",
		"Against the gnet floor of this run (0.50 KiB per connection at 100)",
		"| " + broadcastGnet + " | 100 | 1.00 | 2.00x | 1.2x | **no** |",
		// nbio's floor is on its poller, its targets on net/http: reported.
		"Against the nbio floor of this run (2.00 KiB per connection at 100): no goal, reported.",
		"| echo-nbio | 100 | 8.00 | 4.00x | - | - |",
		// The Socket.IO goal is the native engine's on gnet; the others compare.
		"| " + sioNativeGnet + " | 100 | 100 | 0 | 2.00 | 50 | 10.0 | 10.3 | 3.00 | 4 | yes |",
		"| " + sioZishang520 + " | 100 | 100 | 0 | 2.00 | 50 | 10.0 | 13.9 | 40.00 | - | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
}

// loadgen's clients start package-level workers from init on.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

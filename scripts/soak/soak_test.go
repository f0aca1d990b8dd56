package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/variants"
)

// TestSoakShort is make soak in small: every variant, 2 rounds of 200
// connections. Goroutines must come back exactly; RSS may move by the
// heap's steps, which at this size are larger than 10%.
//
// The variants run side by side (go test's -parallel), each against its
// own target process: a variant's figures are its own process's
// goroutines and RSS, which the others do not change, and most of a
// variant's time is spent waiting, not computing: on gnet, up to 20 s for
// the pool's idle workers to expire after the last round. The gnet
// variants start first, so that the others run while they wait.
func TestSoakShort(t *testing.T) {
	t.Cleanup(harness.RemoveBuilds) // after the parallel subtests
	names := variants.Names()
	slices.SortStableFunc(names, func(a, b string) int {
		return boolInt(!strings.HasSuffix(a, "-gnet")) - boolInt(!strings.HasSuffix(b, "-gnet"))
	})
	for _, v := range names {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			err := Run(Config{Rounds: 2, N: 200, Variants: v, Settle: 30 * time.Second, RSSSlackMiB: 16}, &out)
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestParseProfile: idle ants workers (their run loop innermost) are
// counted apart; a worker running a task, whose frames sit above the run
// loop, counts as any goroutine.
func TestParseProfile(t *testing.T) {
	const profile = `goroutine profile: total 9
3 @ 0x48a02e 0x418fee 0x418b32 0x95ed6a 0x491821
#	0x95ed69	github.com/panjf2000/ants/v2.(*goWorker).run.func1+0x69	/root/go/pkg/mod/github.com/panjf2000/ants/v2@v2.11.3/worker.go:69

2 @ 0x48a02e 0x418fee 0x418b32 0x95ed6a 0x491821
#	0x97a349	github.com/knowngood/knowngood/servers/internal/wsserver.(*gnetTarget).register+0x49	/work/servers/internal/wsserver/gnet.go:128
#	0x95ed69	github.com/panjf2000/ants/v2.(*goWorker).run.func1+0x69	/root/go/pkg/mod/github.com/panjf2000/ants/v2@v2.11.3/worker.go:74

1 @ 0x48a02e 0x466605 0x95de71 0x491821
#	0x95de70	github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers+0xf0	/root/go/pkg/mod/github.com/panjf2000/ants/v2@v2.11.3/ants.go:253

3 @ 0x41f489 0x48c298 0x908753 0x491821
#	0x48c297	os/signal.signal_recv+0x97	/usr/local/go/src/runtime/sigqueue.go:152
`
	g, err := parseProfile(strings.NewReader(profile))
	if err != nil || g.total != 9 || g.idlePool != 3 || g.busy() != 6 {
		t.Errorf("parseProfile: %+v, %v; want 9 in all, 3 idle pool workers", g, err)
	}
	if _, err := parseProfile(strings.NewReader("404 page not found\n")); err == nil {
		t.Error("parseProfile of no profile: no error")
	}
}

package main

import (
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
// The variants run side by side (go test's -parallel, the number of
// cores), each against its own target process: a variant's figures are
// its own process's goroutines and RSS, which the others do not change,
// and most of a variant's time is spent waiting for its goroutine count
// to hold still (12 s on gnet), not computing.
func TestSoakShort(t *testing.T) {
	t.Cleanup(harness.RemoveBuilds) // after the parallel subtests
	for _, v := range variants.Names() {
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

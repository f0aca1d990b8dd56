package main

import (
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
)

// TestSoakShort is make soak in small: every variant, 2 rounds of 200
// connections. Goroutines must come back exactly; RSS may move by the
// heap's steps, which at this size are larger than 10%.
func TestSoakShort(t *testing.T) {
	defer harness.RemoveBuilds()
	var out strings.Builder
	err := Run(Config{Rounds: 2, N: 200, Variants: allVariants, Settle: 30 * time.Second, RSSSlackMiB: 16}, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
}

package schedlat

import (
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSince: goroutines that ran between two readings are in the window,
// and the buckets rise with their bounds.
func TestSince(t *testing.T) {
	before := Buckets()
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() {})
	}
	wg.Wait()
	window, now := Since(before)
	// The runtime samples the goroutines it times: some of the 1000.
	if window.Latency.Count == 0 {
		t.Error("no goroutine timed in the window, after 1000 started in it")
	}
	for i := 1; i < len(now); i++ {
		if now[i].UpToMicros <= now[i-1].UpToMicros {
			t.Fatalf("bucket bounds not rising: %v", now)
		}
	}
}

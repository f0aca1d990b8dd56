package target

import (
	"sync"
	"testing"
)

// TestEachAtMost: every item once, never more than n at a time.
func TestEachAtMost(t *testing.T) {
	items := make([]int, 50)
	var mu sync.Mutex
	running, most, done := 0, 0, map[int]bool{}
	release := make(chan struct{})
	go func() {
		for range items {
			release <- struct{}{}
		}
	}()
	EachAtMost(items, 4, func(i int, _ int) {
		mu.Lock()
		running++
		most = max(most, running)
		done[i] = true
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
	})
	if len(done) != len(items) || most > 4 || most < 1 {
		t.Errorf("%d items done, %d at most at a time; want %d, at most 4", len(done), most, len(items))
	}
}

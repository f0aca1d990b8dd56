package conns_test

import (
	"sync"
	"testing"

	"github.com/knowngood/knowngood/servers/internal/conns"
)

func TestGate(t *testing.T) {
	g := conns.NewGate(3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	took := 0
	for range 50 {
		wg.Go(func() {
			if g.TryAcquire() {
				mu.Lock()
				took++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if took != 3 {
		t.Errorf("%d places taken, want 3", took)
	}
	g.Release()
	if !g.TryAcquire() || g.TryAcquire() {
		t.Error("a released place should be taken once")
	}
	var none *conns.Gate = conns.NewGate(0)
	if none != nil || !none.TryAcquire() {
		t.Error("no cap should let everything through")
	}
}

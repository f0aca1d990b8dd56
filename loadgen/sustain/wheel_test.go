package sustain

import (
	"sync"
	"testing"
	"time"
)

// TestWheel: every emit made due fires once, not before its time, and a
// client's fire in the order they were made due.
func TestWheel(t *testing.T) {
	var mu sync.Mutex
	fired := map[int][]int{} // client id -> gens, in firing order
	firedAt := map[[2]int]time.Time{}
	all := make(chan struct{})
	const clients, each = 20, 5
	w := newWheel(20*time.Millisecond, 3, func(c *client, gen int) {
		mu.Lock()
		defer mu.Unlock()
		fired[c.id] = append(fired[c.id], gen)
		firedAt[[2]int{c.id, gen}] = time.Now()
		if len(firedAt) == clients*each {
			close(all)
		}
	})
	defer w.close()
	madeAt := map[[2]int]time.Time{}
	for id := range clients {
		c := &client{id: id}
		for gen := range each {
			d := time.Duration(gen) * 15 * time.Millisecond
			madeAt[[2]int{id, gen}] = time.Now().Add(d)
			w.at(d, c, gen)
		}
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatal("not every emit fired within 30 s")
	}
	mu.Lock()
	defer mu.Unlock()
	for id, gens := range fired {
		for i, gen := range gens {
			if gen != i {
				t.Fatalf("client %d fired %v, want 0..%d in order", id, gens, each-1)
			}
			if at, due := firedAt[[2]int{id, gen}], madeAt[[2]int{id, gen}]; at.Before(due) {
				t.Errorf("client %d gen %d fired %v before its time", id, gen, due.Sub(at))
			}
		}
	}
}

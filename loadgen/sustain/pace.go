package sustain

import (
	"container/heap"
	"runtime"
	"sync"
	"time"
)

// pacerTick is how often the pacer looks for due emits: an emit goes out
// at most this late, against intervals of seconds.
const pacerTick = 5 * time.Millisecond

// pacer fires the clients' emits from one goroutine per processor, each
// over a heap of when its clients emit next, instead of a timer per
// client: a timer that fires starts a goroutine, and at 10,000 clients
// emitting every 1-5 s those goroutines' starts and wake-ups took about
// a fifth of the load client's CPU (perf), more than the replica it
// measured used for the same connections. An emit's write does not wait
// on the loops (what does not fit goes through the loop); on a goroutine
// connection it may wait up to siolite's write bound for a target that
// stopped reading, and the shard's other emits with it, as they would
// wait for the cores.
type pacer struct {
	shards []*paceShard
	stop   chan struct{}
	wg     sync.WaitGroup
}

type paceShard struct {
	mu  sync.Mutex
	due dueHeap
}

// newPacer starts the pacer's goroutines; close stops them.
func newPacer() *pacer {
	p := &pacer{shards: make([]*paceShard, runtime.GOMAXPROCS(0)), stop: make(chan struct{})}
	for i := range p.shards {
		s := &paceShard{}
		p.shards[i] = s
		p.wg.Go(func() { s.run(p.stop) })
	}
	return p
}

// after has c emit in d, unless its connection gen has ended by then.
func (p *pacer) after(d time.Duration, c *client, gen int) {
	s := p.shards[c.id%len(p.shards)]
	s.mu.Lock()
	heap.Push(&s.due, dueEmit{at: time.Now().Add(d).UnixNano(), c: c, gen: gen})
	s.mu.Unlock()
}

// close stops the pacer; emits still due are not made.
func (p *pacer) close() {
	close(p.stop)
	p.wg.Wait()
}

func (s *paceShard) run(stop <-chan struct{}) {
	tick := time.NewTicker(pacerTick)
	defer tick.Stop()
	var ready []dueEmit
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			ready = ready[:0]
			s.mu.Lock()
			for len(s.due) > 0 && s.due[0].at <= now.UnixNano() {
				ready = append(ready, heap.Pop(&s.due).(dueEmit))
			}
			s.mu.Unlock()
			// Outside the lock: an emit sets its client's next one.
			for _, e := range ready {
				e.c.emit(e.gen)
			}
		}
	}
}

// dueEmit is one client's next emit.
type dueEmit struct {
	at  int64 // Unix ns
	c   *client
	gen int
}

// dueHeap orders the emits by time, the earliest first (container/heap).
type dueHeap []dueEmit

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEmit)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = dueEmit{} // let the client go
	*h = old[:len(old)-1]
	return e
}

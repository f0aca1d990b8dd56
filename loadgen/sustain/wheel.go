package sustain

import (
	"sync"
	"time"
)

// wheel fires the clients' emits in ticks, from one goroutine per Go
// processor, instead of a runtime timer and a new goroutine for each emit:
// at 10,000 clients emitting every 1-5 s those were 3,000 goroutine starts
// and 6,000 timer-heap changes a second. An emit is due at the first tick
// at or after its time, so an interval comes out up to a tick long (a tenth
// of -emit-interval's least, between 0.1 and 1 ms). The tick stays that
// short on purpose: a coarser one sends each tick's emits together, which
// the target then reads in one pass; at 10 ms both sides' CPU fell (the
// client's to 0.75x the replica's) and the emit p50 rose from 0.2 to
// 0.9 ms, a change in the load's shape, not a cheaper client. Nothing is
// cancelled: a client whose connection changed meanwhile finds its gen
// stale and does nothing (client.emit).
type wheel struct {
	tick   time.Duration
	start  time.Time
	shards []*wheelShard
	stop   chan struct{}
	done   sync.WaitGroup
}

// wheelShard is one goroutine's slots: a client's emits all go to the
// shard of its id, so they stay in order.
type wheelShard struct {
	mu    sync.Mutex
	slots map[int64][]due // by tick since start
	next  int64           // the first tick not yet fired
}

type due struct {
	c   *client
	gen int
}

// newWheel starts shards goroutines that call fire for each due emit.
func newWheel(emitMin time.Duration, shards int, fire func(c *client, gen int)) *wheel {
	w := &wheel{tick: min(max(emitMin/10, 100*time.Microsecond), time.Millisecond), start: time.Now(), stop: make(chan struct{})}
	for range max(shards, 1) {
		s := &wheelShard{slots: map[int64][]due{}}
		w.shards = append(w.shards, s)
		w.done.Go(func() { w.run(s, fire) })
	}
	return w
}

// at makes c's emit of gen due after d.
func (w *wheel) at(d time.Duration, c *client, gen int) {
	s := w.shards[c.id%len(w.shards)]
	t := int64((time.Since(w.start) + d + w.tick - 1) / w.tick)
	s.mu.Lock()
	t = max(t, s.next)
	s.slots[t] = append(s.slots[t], due{c, gen})
	s.mu.Unlock()
}

// run fires s's slots as their ticks pass, until close.
func (w *wheel) run(s *wheelShard, fire func(*client, int)) {
	ticker := time.NewTicker(w.tick)
	defer ticker.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-ticker.C:
		}
		now := int64(time.Since(w.start) / w.tick)
		for {
			s.mu.Lock()
			if s.next > now {
				s.mu.Unlock()
				break
			}
			slot := s.slots[s.next]
			delete(s.slots, s.next)
			s.next++
			s.mu.Unlock()
			for _, d := range slot {
				fire(d.c, d.gen)
			}
		}
	}
}

// close stops the goroutines; the emits still waiting are dropped.
func (w *wheel) close() {
	close(w.stop)
	w.done.Wait()
}

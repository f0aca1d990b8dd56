package sioengine

import (
	"sync"
	"time"
)

// sessionTimer is one of a session's timers (the heartbeat, the connect
// timeout): a *time.Timer made by time.AfterFunc on net/http, a wheelTimer
// of its loop's wheel on gnet. As with a *time.Timer, Stop and Reset
// report whether the timer was armed, its function not yet run.
type sessionTimer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// timerSource makes a session's timers.
type timerSource interface {
	afterFunc(d time.Duration, f func()) sessionTimer
}

// runtimeTimers are the runtime's timers, for net/http sessions: each
// firing runs f on a goroutine of its own.
type runtimeTimers struct{}

func (runtimeTimers) afterFunc(d time.Duration, f func()) sessionTimer { return time.AfterFunc(d, f) }

// loopRunner runs a function on one event loop (wsserver.Loop); false:
// the loop has stopped, and f will not run.
type loopRunner interface {
	Execute(f func()) bool
}

// wheelSlots is the number of slots of a wheel, a power of two. A timer
// further than that many ticks away stays in its slot for more than one
// turn; with the tick an eighth of the shortest timeout that is rare.
const wheelSlots = 512

// wheel is the timers of the sessions of one gnet event loop: a hashed
// timing wheel of tick-wide slots, turned by one runtime timer (the
// ticker) whose firing runs the timers that came due as one task of the
// loop. A timer's function therefore runs on the loop, in order with the
// loop's other work: never beside its session's messages (a pong and the
// ping timeout it answers cannot cross), and no goroutine starts per
// session or per firing. Arming, resetting and stopping a timer is O(1);
// a tick costs the timers of one slot.
//
// A timer fires on the first tick at or after its deadline: never early,
// and at most one tick late while the loop keeps up (a busy loop runs it
// once it gets to the task). The ticker runs only while a timer is armed,
// and not at all once the loop has refused a task (its engine stopped).
type wheel struct {
	loop loopRunner
	tick time.Duration
	now  func() time.Duration // the wheel's clock, monotonic

	mu      sync.Mutex
	slots   [wheelSlots]*wheelTimer // each a list, by next
	armed   int                     // timers in the slots
	done    int64                   // ticks run: no timer due by done*tick is left
	ticker  *time.Timer             // wakes the loop for the next tick
	ticking bool                    // ticker is set, or its task is on its way
	stopped bool                    // the loop refused the ticker's task
	fired   []*wheelTimer           // the due timers a tick took out
}

// Timer states.
const (
	timerIdle   = iota // stopped, or its function has run
	timerArmed         // in a slot
	timerFiring        // taken out by a tick, its function about to run
)

// wheelTimer is one timer of a wheel. Its fields but w and f are guarded
// by the wheel's mu.
type wheelTimer struct {
	w          *wheel
	f          func()
	at         int64 // the tick that fires it
	prev, next *wheelTimer
	state      int
}

// wheelTick is a wheel's tick for the engine's timeouts: an eighth of the
// shortest, between 10 ms and 1 s, as wsserver's keepalive sweep steps
// (1 s with Node's defaults).
func wheelTick(o Options) time.Duration {
	shortest := min(o.PingInterval, o.PingTimeout, o.ConnectTimeout)
	return min(max(shortest/8, 10*time.Millisecond), time.Second)
}

func newWheel(loop loopRunner, tick time.Duration) *wheel {
	epoch := time.Now()
	w := &wheel{loop: loop, tick: tick, now: func() time.Duration { return time.Since(epoch) }}
	w.ticker = time.AfterFunc(time.Hour, w.wake)
	w.ticker.Stop()
	return w
}

func (w *wheel) afterFunc(d time.Duration, f func()) sessionTimer {
	t := &wheelTimer{w: w, f: f}
	t.Reset(d)
	return t
}

// Reset arms t to fire d from now. A run a tick had taken out but not yet
// made is called off.
func (t *wheelTimer) Reset(d time.Duration) bool {
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.disarmLocked(t)
	now := w.now()
	if !w.ticking {
		// Idle until now: no tick before this one has anything to run.
		w.done = max(w.done, int64(now/w.tick))
	}
	// The first tick that starts at or after the deadline, and never
	// one already run.
	due := now + max(d, 0)
	t.at = max(int64((due+w.tick-1)/w.tick), w.done+1)
	w.linkLocked(t)
	if !w.ticking && !w.stopped {
		w.ticking = true
		w.ticker.Reset(w.untilNextLocked(now))
	}
	return was
}

// Stop disarms t; true: its function will not run for this arming.
func (t *wheelTimer) Stop() bool {
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.disarmLocked(t)
	if w.armed == 0 && w.ticking && w.ticker.Stop() {
		w.ticking = false
	}
	return was
}

// disarmLocked takes t out of its slot, or calls off the run a tick has
// taken it out for; false: it was neither.
func (w *wheel) disarmLocked(t *wheelTimer) bool {
	switch t.state {
	case timerArmed:
		w.unlinkLocked(t)
	case timerFiring:
		t.state = timerIdle
	default:
		return false
	}
	return true
}

func (w *wheel) linkLocked(t *wheelTimer) {
	head := &w.slots[t.at&(wheelSlots-1)]
	t.prev, t.next, t.state = nil, *head, timerArmed
	if *head != nil {
		(*head).prev = t
	}
	*head = t
	w.armed++
}

func (w *wheel) unlinkLocked(t *wheelTimer) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		w.slots[t.at&(wheelSlots-1)] = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	}
	t.prev, t.next, t.state = nil, nil, timerIdle
	w.armed--
}

// untilNextLocked is the wait from now to the start of the next tick.
func (w *wheel) untilNextLocked(now time.Duration) time.Duration {
	return max(time.Duration(w.done+1)*w.tick-now, 0)
}

// wake is the ticker: the tick runs on the loop.
func (w *wheel) wake() {
	if !w.loop.Execute(func() { w.advance(w.now()) }) {
		w.mu.Lock()
		w.ticking, w.stopped = false, true // and so have its sessions
		w.mu.Unlock()
	}
}

// advance runs every tick up to now: the timers due are taken out, then
// their functions run one by one, outside the lock (they reset timers of
// the wheel), each unless it was stopped or reset meanwhile (by one that
// ran before it). On the loop.
func (w *wheel) advance(now time.Duration) {
	w.mu.Lock()
	target := int64(now / w.tick)
	fired := w.fired
	w.fired = nil // a function that panics leaves the next tick a new one
	for k := w.done + 1; k <= target && k <= w.done+wheelSlots; k++ {
		for t := w.slots[k&(wheelSlots-1)]; t != nil; {
			next := t.next
			if t.at <= target {
				w.unlinkLocked(t)
				t.state = timerFiring
				fired = append(fired, t)
			}
			t = next
		}
	}
	w.done = max(w.done, target)
	w.ticking = w.armed > 0
	if w.ticking {
		w.ticker.Reset(w.untilNextLocked(now))
	}
	w.mu.Unlock()
	for i, t := range fired {
		fired[i] = nil
		w.mu.Lock()
		run := t.state == timerFiring
		if run {
			t.state = timerIdle
		}
		w.mu.Unlock()
		if run {
			t.f()
		}
	}
	w.mu.Lock()
	w.fired = fired[:0]
	w.mu.Unlock()
}

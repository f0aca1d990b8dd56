package sioengine

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// idleLoop is a loop that never runs the ticker's task: the tests turn
// the wheel themselves, on a clock of their own.
type idleLoop struct{}

func (idleLoop) Execute(func()) bool { return false }

// testWheel is a wheel on a clock the test moves. Its tick is an hour
// of that clock, and the real ticker, set an hour ahead, never fires
// during a test.
func testWheel() (*wheel, *time.Duration) {
	w := newWheel(idleLoop{}, time.Hour)
	clock := new(time.Duration)
	w.now = func() time.Duration { return *clock }
	return w, clock
}

// turn moves the clock to until in steps of a quarter tick, running the
// wheel at each.
func turn(w *wheel, clock *time.Duration, until time.Duration) {
	for *clock < until {
		*clock = min(*clock+w.tick/4, until)
		w.advance(*clock)
	}
}

// TestWheelFiresOnTime: timers armed at many deadlines, a few turns of
// the wheel long, each fire once: never before their deadline, and less
// than one tick after it when the wheel is turned every quarter tick.
// Stopped ones never fire; reset ones fire at their new deadline only.
func TestWheelFiresOnTime(t *testing.T) {
	w, clock := testWheel()
	const n = 10_000
	span := 3 * wheelSlots * w.tick
	rng := rand.New(rand.NewPCG(1, 2))
	type probe struct {
		due, firedAt time.Duration
		fires        int
		timer        sessionTimer
	}
	probes := make([]*probe, n)
	for i := range probes {
		p := &probe{due: time.Duration(rng.Int64N(int64(span)))}
		p.timer = w.afterFunc(p.due, func() { p.fires++; p.firedAt = *clock })
		probes[i] = p
	}
	for i, p := range probes {
		switch i % 4 {
		case 1: // stopped
			if !p.timer.Stop() {
				t.Fatal("Stop of an armed timer said it was not armed")
			}
			p.due = -1
		case 2: // pushed out
			p.due += 5 * w.tick
			if !p.timer.Reset(p.due) {
				t.Fatal("Reset of an armed timer said it was not armed")
			}
		}
	}
	turn(w, clock, span+10*w.tick)
	for i, p := range probes {
		switch {
		case p.due < 0 && p.fires != 0:
			t.Fatalf("timer %d fired after Stop", i)
		case p.due < 0:
		case p.fires != 1:
			t.Fatalf("timer %d fired %d times, want once", i, p.fires)
		case p.firedAt < p.due:
			t.Fatalf("timer %d fired at %v, before its deadline %v", i, p.firedAt, p.due)
		case p.firedAt-p.due >= w.tick:
			t.Fatalf("timer %d fired at %v, a tick or more after its deadline %v", i, p.firedAt, p.due)
		}
	}
	if w.armed != 0 || w.ticking {
		t.Errorf("after every timer fired: %d armed, ticking %v; want none, not ticking", w.armed, w.ticking)
	}
	if probes[1].timer.Stop() || probes[0].timer.Stop() {
		t.Error("Stop of a stopped or fired timer said it was armed")
	}
}

// TestWheelCatchesUp: a loop that comes back to the wheel many turns
// late runs every timer that came due meanwhile, once, and none early;
// one that a timer's function re-arms fires again at its new deadline.
func TestWheelCatchesUp(t *testing.T) {
	w, clock := testWheel()
	fires := 0
	var again sessionTimer
	again = w.afterFunc(2*w.tick, func() {
		fires++
		if fires == 1 {
			again.Reset(3 * w.tick)
		}
	})
	late := w.afterFunc(10*wheelSlots*w.tick, func() { fires += 10 })
	defer late.Stop()
	*clock = 3 * wheelSlots * w.tick
	w.advance(*clock)
	if fires != 1 {
		t.Fatalf("after the catch-up: %d fires, want the due timer's one", fires)
	}
	turn(w, clock, *clock+3*w.tick)
	if fires != 2 {
		t.Errorf("after the re-armed deadline: %d fires, want 2", fires)
	}
}

// TestWheelStopCallsOffATakenRun: of two timers due on the same tick,
// whichever runs first stops the other, which the tick has already taken
// out: Stop reports it armed, and its function does not run. Of two more,
// whichever runs first resets the other, which then runs once, at its new
// deadline only.
func TestWheelStopCallsOffATakenRun(t *testing.T) {
	w, clock := testWheel()
	var stops [2]sessionTimer
	stopRuns := 0
	for i := range stops {
		stops[i] = w.afterFunc(w.tick, func() {
			stopRuns++
			if !stops[1-i].Stop() {
				t.Error("Stop of a timer taken out but not run said it was not armed")
			}
		})
	}
	var resets [2]sessionTimer
	var runs [2][]time.Duration
	var resetAt time.Duration
	resetter := -1
	for i := range resets {
		resets[i] = w.afterFunc(w.tick, func() {
			runs[i] = append(runs[i], *clock)
			if resetter < 0 {
				resetter, resetAt = i, *clock
				if !resets[1-i].Reset(2 * w.tick) {
					t.Error("Reset of a timer taken out but not run said it was not armed")
				}
			}
		})
	}
	turn(w, clock, 5*w.tick)
	if stopRuns != 1 {
		t.Errorf("%d of the timers that stop each other ran, want 1", stopRuns)
	}
	if resetter < 0 {
		t.Fatal("neither of the timers that reset each other ran")
	}
	first, second := runs[resetter], runs[1-resetter]
	if len(first) != 1 || len(second) != 1 || second[0] < resetAt+2*w.tick {
		t.Errorf("the first ran at %v, the one it reset at %v at %v; want each once, the second 2 ticks on or later",
			first, resetAt, second)
	}
}

// taskLoop is a loop of its own: a goroutine that runs what Execute
// gives it, in order, until stop; then Execute refuses, and says so on
// refused.
type taskLoop struct {
	tasks   chan func()
	quit    chan struct{}
	done    chan struct{}
	refused chan struct{}
	on      bool // a task is running; read on the loop only
}

func newTaskLoop() *taskLoop {
	l := &taskLoop{tasks: make(chan func(), 64), quit: make(chan struct{}), done: make(chan struct{}),
		refused: make(chan struct{}, 1)}
	go func() {
		defer close(l.done)
		for {
			select {
			case f := <-l.tasks:
				l.on = true
				f()
				l.on = false
			case <-l.quit:
				return
			}
		}
	}()
	return l
}

func (l *taskLoop) Execute(f func()) bool {
	select {
	case <-l.quit:
		select {
		case l.refused <- struct{}{}:
		default:
		}
		return false
	default:
	}
	l.tasks <- f
	return true
}

func (l *taskLoop) stop() {
	close(l.quit)
	<-l.done
}

// TestWheelTicksOnItsLoop: on the real clock, timers fire as tasks of
// the wheel's loop, none before its time; the ticker stops once none is
// armed, and for good once the loop has refused a tick.
func TestWheelTicksOnItsLoop(t *testing.T) {
	loop := newTaskLoop()
	w := newWheel(loop, 10*time.Millisecond)
	type run struct {
		late   time.Duration
		onLoop bool
	}
	runs := make(chan run, 3)
	for _, d := range []time.Duration{15 * time.Millisecond, 30 * time.Millisecond, 50 * time.Millisecond} {
		armed := time.Now()
		w.afterFunc(d, func() { runs <- run{time.Since(armed) - d, loop.on} })
	}
	for range 3 {
		r := <-runs
		if r.late < 0 || !r.onLoop {
			t.Errorf("a timer ran %v after its time (on its loop %v), want at it or after, on its loop", r.late, r.onLoop)
		}
	}
	w.mu.Lock()
	armed, ticking := w.armed, w.ticking
	w.mu.Unlock()
	if armed != 0 || ticking {
		t.Errorf("all run: %d armed, ticking %v; want none, the ticker stopped", armed, ticking)
	}

	loop.stop()
	w.afterFunc(time.Millisecond, func() { t.Error("a timer ran on a stopped loop") })
	<-loop.refused
	// wake marks the wheel stopped as soon as Execute has returned.
	for {
		w.mu.Lock()
		stopped := w.stopped
		w.mu.Unlock()
		if stopped {
			break
		}
		runtime.Gosched()
	}
	w.afterFunc(time.Millisecond, func() { t.Error("a timer ran on a stopped loop") })
	w.mu.Lock()
	ticking = w.ticking
	w.mu.Unlock()
	if ticking {
		t.Error("the ticker was set again on a stopped loop")
	}
}

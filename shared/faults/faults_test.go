package faults

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/shared/metrics"
)

// newMetrics is a fresh set of metrics whose fault counts a test reads.
func newMetrics() *metrics.Metrics { return metrics.New(prometheus.NewRegistry(), "test") }

func faultCounts(m *metrics.Metrics) map[string]uint64 { return m.Snapshot().Faults }

// TestOffWhenOff: with every mode off nothing is in force (the targets'
// one atomic load finds nil); any mode on puts the modes in force.
func TestOffWhenOff(t *testing.T) {
	if f := New(Modes{}, newMetrics()); f.On() || f.now.Load() != nil {
		t.Fatal("every mode off: the injector is on")
	}
	for name, set := range map[string]func(*Modes){
		"reject":            func(c *Modes) { c.Reject = 0.5 },
		"delay":             func(c *Modes) { c.Delay = time.Millisecond },
		"close-after":       func(c *Modes) { c.CloseAfter = 3 },
		"drop":              func(c *Modes) { c.Drop = 0.1 },
		"leak-timers":       func(c *Modes) { c.LeakTimers = time.Second },
		"drop-chunked-post": func(c *Modes) { c.DropChunkedPost = true },
	} {
		var cfg Modes
		set(&cfg)
		f := New(cfg, nil)
		if !f.On() || f.Modes() != cfg {
			t.Errorf("-fault-%s on: On %v, Modes %+v", name, f.On(), f.Modes())
		}
		if f.Set(Modes{}); f.On() {
			t.Errorf("-fault-%s turned off: still on", name)
		}
	}
}

// TestNilInjector: a nil Injector, every mode off, injects nothing and
// does not panic, so a layer whose faults another applies passes none.
func TestNilInjector(t *testing.T) {
	var f *Injector
	var c Count
	for range 5 {
		if f.Reject() || f.DropChunkedPost() || f.Message(&c) != (Fate{}) {
			t.Fatal("a nil injector injected a fault")
		}
	}
	f.LeakTimer(nil)
	if f.On() || f.Modes() != (Modes{}) {
		t.Error("a nil injector is on")
	}
}

func TestAlwaysAndNever(t *testing.T) {
	m := newMetrics()
	f := New(Modes{Reject: 1, Drop: 1}, m)
	var c Count
	for range 10 {
		if !f.Reject() || !f.Message(&c).Drop {
			t.Fatal("probability 1 did not strike")
		}
	}
	got := faultCounts(m)
	if got[KindReject] != 10 || got[KindDrop] != 10 {
		t.Errorf("counts %v, want 10 rejects and 10 drops", got)
	}

	// Only the modes given strike: a delay alone rejects and drops nothing.
	m = newMetrics()
	f = New(Modes{Delay: time.Millisecond}, m)
	for range 100 {
		if f.Reject() || f.Message(&c).Drop || f.DropChunkedPost() {
			t.Fatal("a mode that is off struck")
		}
	}
	if got := faultCounts(m); got[KindReject] != 0 || got[KindDrop] != 0 {
		t.Errorf("counts %v, want none", got)
	}
}

// TestRates: a probability strikes about that often, and every strike is
// counted. The bounds are wide (over 10 standard deviations), so that the
// test never fails by chance.
func TestRates(t *testing.T) {
	const n = 20000
	m := newMetrics()
	f := New(Modes{Reject: 0.25, Drop: 0.5}, m)
	var c Count
	rejects, drops := 0, 0
	for range n {
		if f.Reject() {
			rejects++
		}
		if f.Message(&c).Drop {
			drops++
		}
	}
	if rejects < n/4-600 || rejects > n/4+600 {
		t.Errorf("%d rejects of %d at 0.25", rejects, n)
	}
	if drops < n/2-700 || drops > n/2+700 {
		t.Errorf("%d drops of %d at 0.5", drops, n)
	}
	got := faultCounts(m)
	if got[KindReject] != uint64(rejects) || got[KindDrop] != uint64(drops) {
		t.Errorf("counted %v, struck %d rejects and %d drops", got, rejects, drops)
	}
}

// TestDelay: every message not dropped is delayed, and counted; a dropped
// one is neither.
func TestDelay(t *testing.T) {
	m := newMetrics()
	f := New(Modes{Delay: 30 * time.Millisecond}, m)
	var c Count
	for range 3 {
		if d := f.Message(&c).Delay; d != 30*time.Millisecond {
			t.Fatalf("Delay = %v", d)
		}
	}
	if got := faultCounts(m)[KindDelay]; got != 3 {
		t.Errorf("%d delays counted, want 3", got)
	}
	f.Set(Modes{Delay: time.Second, Drop: 1})
	if fate := f.Message(&c); !fate.Drop || fate.Delay != 0 {
		t.Errorf("a dropped message: %+v, want no delay", fate)
	}
	if got := faultCounts(m)[KindDelay]; got != 3 {
		t.Errorf("%d delays counted, want 3: a dropped message is not delayed", got)
	}

	// Without -fault-delay, another mode on: no delay, none counted.
	m = newMetrics()
	f = New(Modes{CloseAfter: 1}, m)
	if f.Message(&c).Delay != 0 {
		t.Error("a delay without -fault-delay")
	}
	if got := faultCounts(m)[KindDelay]; got != 0 {
		t.Errorf("%d delays counted, want 0", got)
	}
}

// TestCloseAfter: true for the n-th message only, so that a connection is
// closed, and counted, once; a dropped message counts towards it, so the
// connection closes after the same message either way.
func TestCloseAfter(t *testing.T) {
	m := newMetrics()
	f := New(Modes{CloseAfter: 3}, m)
	var c Count
	for n := 1; n <= 6; n++ {
		if got, want := f.Message(&c).Close, n == 3; got != want {
			t.Errorf("message %d: Close %v, want %v", n, got, want)
		}
	}
	if got := faultCounts(m)[KindCloseAfter]; got != 1 {
		t.Errorf("%d closes counted, want 1", got)
	}
	f.Set(Modes{Drop: 1, CloseAfter: 2})
	var d Count
	for n := 1; n <= 3; n++ {
		if fate := f.Message(&d); !fate.Drop || fate.Close != (n == 2) {
			t.Errorf("message %d: %+v; want dropped, Close %v", n, fate, n == 2)
		}
	}
}

// TestCloseAfterSwitched: a connection counts towards close-after from
// the moment it was last changed: one open before a change closes after
// that many more messages, one opened after it after that many in all;
// messages before close-after was on do not count, and setting the value
// in force again changes nothing.
func TestCloseAfterSwitched(t *testing.T) {
	f := New(Modes{}, newMetrics())
	var old, fresh Count
	for range 10 {
		f.Message(&old) // every mode off: nothing counted
	}
	f.Set(Modes{CloseAfter: 3})
	closesAt := func(c *Count, most int) int {
		for n := 1; n <= most; n++ {
			if f.Message(c).Close {
				return n
			}
		}
		return 0
	}
	if n := closesAt(&old, 2); n != 0 {
		t.Fatalf("the old connection closed at message %d of 2", n)
	}
	f.Update(func(m *Modes) { m.Drop = 0 }) // another mode: the count goes on
	if n := closesAt(&old, 5); n != 1 {
		t.Errorf("the old connection closed at its message %d after 2 more, want 1", n)
	}
	if n := closesAt(&fresh, 5); n != 3 {
		t.Errorf("a new connection closed at message %d, want 3", n)
	}
	var moved Count
	closesAt(&moved, 2)
	f.Set(Modes{CloseAfter: 4}) // changed: counted again from here
	if n := closesAt(&moved, 10); n != 4 {
		t.Errorf("after a change to 4, closed at message %d, want 4", n)
	}
	var same Count
	closesAt(&same, 2)
	f.Set(Modes{CloseAfter: 4}) // the value in force: no change
	if n := closesAt(&same, 10); n != 2 {
		t.Errorf("after setting 4 again, closed at message %d more, want 2", n)
	}
	f.Set(Modes{})
	f.Set(Modes{CloseAfter: 4}) // off and on again: a new count
	var again Count
	closesAt(&again, 1)
	f.Set(Modes{})
	f.Set(Modes{CloseAfter: 4})
	if n := closesAt(&again, 10); n != 4 {
		t.Errorf("after off and on again, closed at message %d, want 4", n)
	}
}

// TestUpdateRace: updates at once are applied one after the other, each
// on the other's result; messages decided meanwhile each see one set of
// modes whole (run under -race).
func TestUpdateRace(t *testing.T) {
	f := New(Modes{}, newMetrics())
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			f.Update(func(m *Modes) {
				m.CloseAfter++
				if i%2 == 0 {
					m.Delay += time.Millisecond
				}
			})
		})
		wg.Go(func() {
			var c Count
			if fate := f.Message(&c); fate.Drop {
				t.Error("dropped with drop off")
			}
		})
	}
	wg.Wait()
	if got := f.Modes(); got.CloseAfter != n || got.Delay != n/2*time.Millisecond {
		t.Errorf("after %d updates at once: %+v", n, got)
	}
}

// TestNoMetrics: with -metrics=false the injector decides alike and counts
// nowhere.
func TestNoMetrics(t *testing.T) {
	f := New(Modes{Reject: 1, Drop: 1, Delay: time.Second, CloseAfter: 1, DropChunkedPost: true}, nil)
	var c Count
	if fate := f.Message(&c); !f.Reject() || !fate.Drop || !fate.Close || !f.DropChunkedPost() {
		t.Errorf("an injector without metrics decided otherwise: %+v", fate)
	}
	f.Set(Modes{Delay: time.Second})
	if f.Message(&c).Delay != time.Second {
		t.Error("an injector without metrics did not delay")
	}
}

func TestCloseCode(t *testing.T) {
	if CloseCode != 1011 {
		t.Errorf("CloseCode = %d: clients are told to expect 1011 (internal error)", CloseCode)
	}
}

// TestDropChunkedPost: while on, every such POST is dropped and counted.
func TestDropChunkedPost(t *testing.T) {
	m := newMetrics()
	f := New(Modes{DropChunkedPost: true}, m)
	for range 2 {
		if !f.DropChunkedPost() {
			t.Fatal("drop-chunked-post on: not dropped")
		}
	}
	f.Set(Modes{Reject: 0.5})
	if f.DropChunkedPost() {
		t.Fatal("drop-chunked-post off: dropped")
	}
	if got := faultCounts(m)[KindDropChunkedPost]; got != 2 {
		t.Errorf("faults{drop_chunked_post} = %d, want 2", got)
	}
}

// TestLeakTimer: each leaked timer is counted once, fires again and again
// (it is never stopped), and keeps what it holds; an injector with
// leak-timers off starts none.
func TestLeakTimer(t *testing.T) {
	var none *Injector
	none.LeakTimer(nil)
	m := newMetrics()
	f := New(Modes{Reject: 1}, m)
	f.LeakTimer("socket")
	f.Set(Modes{LeakTimers: 10 * time.Millisecond})
	f.LeakTimer("socket")
	f.LeakTimer("socket")
	if got := faultCounts(m)[KindLeakTimer]; got != 2 {
		t.Fatalf("faults{leak_timer} = %d, want 2", got)
	}
	l := &leaked{buf: make([]byte, 1), period: time.Millisecond}
	fired := make(chan struct{})
	l.timer = time.AfterFunc(time.Hour, func() {})
	l.fire()
	l.timer = time.AfterFunc(l.period, func() { close(fired) })
	<-fired
	if l.buf[0] != 1 {
		t.Fatalf("the interval did not touch what it holds")
	}
}

// TestMessageAllocates: with every mode off, and with one on, a message's
// fate allocates nothing.
func TestMessageAllocates(t *testing.T) {
	for _, modes := range []Modes{{}, {Drop: 0.5, CloseAfter: 1 << 30, Delay: time.Millisecond}} {
		f := New(modes, nil)
		var c Count
		if n := testing.AllocsPerRun(1000, func() { f.Message(&c) }); n != 0 {
			t.Errorf("%+v: %v allocations per message", modes, n)
		}
	}
}

package faults

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/shared/metrics"
)

// newMetrics is a fresh set of metrics whose fault counts a test reads.
func newMetrics() *metrics.Metrics { return metrics.New(prometheus.NewRegistry(), "test") }

func faultCounts(m *metrics.Metrics) map[string]uint64 { return m.Snapshot().Faults }

func TestNewNilWhenOff(t *testing.T) {
	if f := New(Modes{}, newMetrics()); f != nil {
		t.Fatalf("every mode off: got %+v, want nil", f)
	}
	for name, set := range map[string]func(*Modes){
		"reject":      func(c *Modes) { c.Reject = 0.5 },
		"delay":       func(c *Modes) { c.Delay = time.Millisecond },
		"close-after": func(c *Modes) { c.CloseAfter = 3 },
		"drop":        func(c *Modes) { c.Drop = 0.1 },
		"leak-timers": func(c *Modes) { c.LeakTimers = time.Second },
	} {
		var cfg Modes
		set(&cfg)
		if New(cfg, nil) == nil {
			t.Errorf("-fault-%s on: got nil", name)
		}
	}
}

// TestNilInjector: a nil Injector, every mode off, injects nothing and
// does not panic, so a target calls it without checking.
func TestNilInjector(t *testing.T) {
	var f *Injector
	for n := range 5 {
		if f.Reject() || f.Drop() || f.CloseAfter(n) {
			t.Fatal("a nil injector injected a fault")
		}
		if drop, closeAfter := f.Message(n); drop || closeAfter {
			t.Fatal("a nil injector's Message injected a fault")
		}
	}
	if f.Delay() != 0 || f.Delaying() {
		t.Error("a nil injector delays")
	}
}

func TestAlwaysAndNever(t *testing.T) {
	m := newMetrics()
	var cfg Modes
	cfg.Reject, cfg.Drop = 1, 1
	f := New(cfg, m)
	for range 10 {
		if !f.Reject() || !f.Drop() {
			t.Fatal("probability 1 did not strike")
		}
	}
	got := faultCounts(m)
	if got[KindReject] != 10 || got[KindDrop] != 10 {
		t.Errorf("counts %v, want 10 rejects and 10 drops", got)
	}

	// Only the modes given strike: a delay alone rejects and drops nothing.
	m = newMetrics()
	cfg = Modes{}
	cfg.Delay = time.Millisecond
	f = New(cfg, m)
	for range 100 {
		if f.Reject() || f.Drop() {
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
	var cfg Modes
	cfg.Reject, cfg.Drop = 0.25, 0.5
	f := New(cfg, m)
	rejects, drops := 0, 0
	for range n {
		if f.Reject() {
			rejects++
		}
		if f.Drop() {
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

func TestDelay(t *testing.T) {
	m := newMetrics()
	var cfg Modes
	cfg.Delay = 30 * time.Millisecond
	f := New(cfg, m)
	if !f.Delaying() {
		t.Fatal("Delaying: false")
	}
	if f.Delaying(); faultCounts(m)[KindDelay] != 0 {
		t.Error("Delaying counted a fault")
	}
	for range 3 {
		if d := f.Delay(); d != 30*time.Millisecond {
			t.Fatalf("Delay = %v", d)
		}
	}
	if got := faultCounts(m)[KindDelay]; got != 3 {
		t.Errorf("%d delays counted, want 3", got)
	}

	// Without -fault-delay, another mode on: no delay, none counted.
	m = newMetrics()
	cfg = Modes{}
	cfg.CloseAfter = 1
	f = New(cfg, m)
	if f.Delay() != 0 || f.Delaying() {
		t.Error("a delay without -fault-delay")
	}
	if got := faultCounts(m)[KindDelay]; got != 0 {
		t.Errorf("%d delays counted, want 0", got)
	}
}

// TestCloseAfter: true for the n-th message only, so that a connection is
// closed, and counted, once.
func TestCloseAfter(t *testing.T) {
	m := newMetrics()
	var cfg Modes
	cfg.CloseAfter = 3
	f := New(cfg, m)
	for n := 0; n <= 6; n++ {
		if got, want := f.CloseAfter(n), n == 3; got != want {
			t.Errorf("CloseAfter(%d) = %v, want %v", n, got, want)
		}
	}
	if got := faultCounts(m)[KindCloseAfter]; got != 1 {
		t.Errorf("%d closes counted, want 1", got)
	}
}

// TestMessage: a dropped message still counts towards -fault-close-after,
// so the connection closes after the same message either way.
func TestMessage(t *testing.T) {
	m := newMetrics()
	var cfg Modes
	cfg.Drop, cfg.CloseAfter = 1, 2
	f := New(cfg, m)
	for n := 1; n <= 3; n++ {
		drop, closeAfter := f.Message(n)
		if !drop || closeAfter != (n == 2) {
			t.Errorf("Message(%d) = %v, %v; want true, %v", n, drop, closeAfter, n == 2)
		}
	}
	got := faultCounts(m)
	if got[KindDrop] != 3 || got[KindCloseAfter] != 1 {
		t.Errorf("counts %v, want 3 drops and 1 close", got)
	}
}

// TestNoMetrics: with -metrics=false the injector decides alike and counts
// nowhere.
func TestNoMetrics(t *testing.T) {
	var cfg Modes
	cfg.Reject, cfg.Drop, cfg.Delay, cfg.CloseAfter = 1, 1, time.Second, 1
	f := New(cfg, nil)
	if !f.Reject() || !f.Drop() || f.Delay() != time.Second || !f.CloseAfter(1) {
		t.Error("an injector without metrics decided otherwise")
	}
}

func TestCloseCode(t *testing.T) {
	if CloseCode != 1011 {
		t.Errorf("CloseCode = %d: clients are told to expect 1011 (internal error)", CloseCode)
	}
}

// TestLeakTimer: each leaked timer is counted once, fires again and again
// (it is never stopped), and keeps what it holds; a nil Injector starts
// none.
func TestLeakTimer(t *testing.T) {
	var none *Injector
	none.LeakTimer(nil)
	var cfg Modes
	cfg.LeakTimers = 10 * time.Millisecond
	m := newMetrics()
	f := New(cfg, m)
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

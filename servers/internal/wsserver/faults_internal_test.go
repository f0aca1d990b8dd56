package wsserver

import (
	"slices"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/faults"
)

// countingSession counts the messages handed to it.
type countingSession struct {
	NopSession
	n int
}

func (s *countingSession) Message(Op, []byte) { s.n++ }

// noDelayHost is a connection that is never closed nor delayed.
type noDelayHost struct{ t *testing.T }

func (h noDelayHost) closeAfterQueue(int) { h.t.Error("closed") }
func (h noDelayHost) newDelayer() delayer {
	h.t.Error("a delayer made")
	return nil
}

// TestFaultMessageAllocs: with modes on that leave a message as it is
// (reject, a close-after not reached), handing it over allocates nothing
// once the connection's fault state is made: the cost of a mode on is
// a look at the modes and a count. Not parallel: the count of
// allocations is the process's.
func TestFaultMessageAllocs(t *testing.T) {
	f := faults.New(faults.Modes{Reject: 0.5, CloseAfter: 1 << 30}, nil)
	cf := new(connFaults)
	s := &countingSession{}
	data := []byte("hello")
	h := noDelayHost{t}
	if n := testing.AllocsPerRun(1000, func() { faultMessage(f, cf, h, s, Text, data) }); n != 0 {
		t.Errorf("%v allocations per message", n)
	}
	if s.n < 1000 {
		t.Errorf("%d messages handed over, want every one", s.n)
	}
}

// recordingDelayer is a delayer that records and runs in order on demand.
type recordingDelayer struct {
	delays []time.Duration
	fs     []func()
	busy   bool
}

func (d *recordingDelayer) after(delay time.Duration, f func()) {
	d.delays = append(d.delays, delay)
	d.fs = append(d.fs, f)
}
func (d *recordingDelayer) holding() bool { return d.busy }
func (d *recordingDelayer) stop()         {}

type delayHost struct {
	d      *recordingDelayer
	closed []int
}

func (h *delayHost) closeAfterQueue(code int) { h.closed = append(h.closed, code) }
func (h *delayHost) newDelayer() delayer      { return h.d }

// TestFaultMessageHolding: once a delayer holds deliveries, a message
// that is not delayed waits behind them (with no delay of its own), and
// a message dropped at close-after closes behind them too; with nothing
// held, it goes at once.
func TestFaultMessageHolding(t *testing.T) {
	f := faults.New(faults.Modes{Delay: time.Second}, nil)
	cf := new(connFaults)
	s := &countingSession{}
	h := &delayHost{d: &recordingDelayer{busy: true}}
	faultMessage(f, cf, h, s, Text, []byte("a"))
	f.Set(faults.Modes{})
	faultMessage(f, cf, h, s, Text, []byte("b"))
	f.Set(faults.Modes{Drop: 1, CloseAfter: 1})
	faultMessage(f, cf, h, s, Text, []byte("c"))
	faultMessage(f, cf, h, s, Text, []byte("d")) // after close-after: ignored
	if want := []time.Duration{time.Second, 0, 0}; !slices.Equal(h.d.delays, want) {
		t.Fatalf("held with delays %v, want %v", h.d.delays, want)
	}
	if s.n != 0 || len(h.closed) != 0 {
		t.Fatalf("handed over %d, closed %v before the held ones ran", s.n, h.closed)
	}
	for _, run := range h.d.fs {
		run()
	}
	if s.n != 2 || len(h.closed) != 1 || h.closed[0] != faults.CloseCode {
		t.Errorf("handed over %d, closed %v; want a and b, then 1011", s.n, h.closed)
	}

	h.d.busy = false // nothing held: at once
	f.Set(faults.Modes{Reject: 1})
	cf = new(connFaults)
	cf.held = h.d
	faultMessage(f, cf, h, s, Text, []byte("e"))
	if s.n != 3 || len(h.d.fs) != 3 {
		t.Errorf("with nothing held: handed over %d, held %d; want it at once", s.n, len(h.d.fs))
	}
}

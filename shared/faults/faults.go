// Package faults is the known-bad modes (-fault-reject, -fault-delay,
// -fault-close-after, -fault-drop, -fault-leak-timers,
// -fault-drop-chunked-post): each target asks it what to do at the points
// where a fault can strike, and it counts every fault it calls for in
// knowngood_faults_total{kind}, so that a client's failures can be
// reconciled with the faults the server injected. The modes given at start
// can be changed while the target serves (the admin listener's POST
// /control/fault): every point asks for the modes in force when it is
// reached, so that a change takes effect at the next handshake or message.
package faults

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knowngood/knowngood/shared/metrics"
)

// Kinds: the values of the kind label, and the keys of /stats "faults".
const (
	KindReject     = "reject"      // a handshake answered 503 (echo-tcp: the connection closed at once)
	KindDelay      = "delay"       // a message or ack held -fault-delay before it was handled
	KindCloseAfter = "close_after" // a connection closed (1011) after -fault-close-after messages
	KindDrop       = "drop"        // a message silently dropped
	KindLeakTimer  = "leak_timer"  // a connection's interval timer, never stopped (-fault-leak-timers)
	// KindDropChunkedPost: a polling POST without Content-Length answered
	// 200 OK with its packets dropped (-fault-drop-chunked-post).
	KindDropChunkedPost = "drop_chunked_post"
)

// leakBytes is what each leaked timer holds besides its socket: the state
// a per-connection interval typically closes over.
const leakBytes = 64 << 10

// CloseCode is the WebSocket close code of -fault-close-after: 1011,
// internal error, the code a server that fails sends.
const CloseCode = 1011

// Modes are the known-bad modes (-fault-*), all off in the zero value.
type Modes struct {
	Reject     float64       // -fault-reject: fraction of handshakes refused
	Delay      time.Duration // -fault-delay: added to every echo and ack
	CloseAfter int           // -fault-close-after: messages before a 1011
	Drop       float64       // -fault-drop: fraction of messages dropped
	// LeakTimers: every Socket.IO connection starts an interval timer of
	// this period that is never stopped (0 = off).
	LeakTimers time.Duration
	// DropChunkedPost: a polling POST without Content-Length is answered
	// as python-engineio 4 answers it, 200 OK with its packets dropped.
	DropChunkedPost bool
}

// Injector decides. The modes in force sit behind one atomic pointer, nil
// while every mode is off: that load and a nil check are all a target pays
// per handshake and per message then. A nil *Injector injects nothing, so
// a layer whose faults another applies passes none.
type Injector struct {
	now atomic.Pointer[inForce]
	mu  sync.Mutex // one change at a time; guards round
	// round numbers the settings of CloseAfter: it moves on whenever
	// CloseAfter changes, and a connection counts its messages towards
	// close-after from the round it last saw (Count).
	round uint32
	m     *metrics.Metrics
}

// inForce is the modes in force, never changed once published.
type inForce struct {
	Modes
	round uint32
}

// New returns an injector with modes m in force.
func New(m Modes, met *metrics.Metrics) *Injector {
	f := &Injector{m: met}
	f.Set(m)
	return f
}

// Modes returns the modes in force.
func (f *Injector) Modes() Modes {
	if f == nil {
		return Modes{}
	}
	if s := f.now.Load(); s != nil {
		return s.Modes
	}
	return Modes{}
}

// Set puts m in force and returns it. The caller has checked it (Check).
func (f *Injector) Set(m Modes) Modes {
	return f.Update(func(now *Modes) { *now = m })
}

// Update puts in force the modes change makes of those in force, as one
// step: of two updates at once, the second sees the first's result. It
// returns the modes now in force.
func (f *Injector) Update(change func(*Modes)) Modes {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.Modes()
	m := old
	change(&m)
	if m.CloseAfter != old.CloseAfter {
		// A new count for every connection, open or not. Round 0 is the
		// one a fresh Count has seen: never in force.
		if f.round++; f.round == 0 {
			f.round = 1
		}
	}
	if m == (Modes{}) {
		f.now.Store(nil)
	} else {
		f.now.Store(&inForce{Modes: m, round: f.round})
	}
	return m
}

// On reports whether any mode is on.
func (f *Injector) On() bool { return f != nil && f.now.Load() != nil }

// load is the modes in force, nil when every mode is off.
func (f *Injector) load() *inForce {
	if f == nil {
		return nil
	}
	return f.now.Load()
}

// Reject reports whether this handshake is to be refused, and counts it.
func (f *Injector) Reject() bool {
	s := f.load()
	return s != nil && f.roll(s.Reject, KindReject)
}

// DropChunkedPost reports whether a polling POST without Content-Length
// is to be answered as python-engineio 4 answers it, and counts it.
func (f *Injector) DropChunkedPost() bool {
	s := f.load()
	if s == nil || !s.DropChunkedPost {
		return false
	}
	f.m.Fault(KindDropChunkedPost)
	return true
}

// Count is one connection's messages towards -fault-close-after: the zero
// value is ready, 8 bytes, safe for concurrent use. It counts only while
// close-after is on, and from the moment close-after was last changed:
// a connection open before the change is closed after that many more
// messages, one opened after it after that many in all.
type Count struct {
	v atomic.Uint64 // round<<32 | messages counted in that round
}

// next counts one message in round and returns the connection's count.
func (c *Count) next(round uint32) uint32 {
	for {
		old := c.v.Load()
		n := uint32(old) + 1
		if uint32(old>>32) != round {
			n = 1
		}
		if c.v.CompareAndSwap(old, uint64(round)<<32|uint64(n)) {
			return n
		}
	}
}

// Fate is what becomes of one message: Drop, it is not handled; Close,
// the connection is closed after it (a dropped message still counts
// towards -fault-close-after, so that every target agrees); Delay, it is
// handled that much later (0 when dropped).
type Fate struct {
	Drop, Close bool
	Delay       time.Duration
}

// Message is the fate of a connection's next message, counted in c, from
// one look at the modes in force, and counts the faults it calls for.
// Close is true once per connection and setting: at the message that
// brings c to -fault-close-after.
func (f *Injector) Message(c *Count) Fate {
	if s := f.load(); s != nil {
		return f.message(s, c)
	}
	return Fate{}
}

func (f *Injector) message(s *inForce, c *Count) Fate {
	var fate Fate
	fate.Drop = f.roll(s.Drop, KindDrop)
	if s.CloseAfter > 0 && int64(c.next(s.round)) == int64(s.CloseAfter) {
		fate.Close = true
		f.m.Fault(KindCloseAfter)
	}
	if !fate.Drop && s.Delay > 0 {
		fate.Delay = s.Delay
		f.m.Fault(KindDelay)
	}
	return fate
}

// LeakTimer, with -fault-leak-timers, starts the known-bad interval timer
// of a new connection: every period it touches its 64 KiB and keeps hold
// alive (the connection's socket), and nothing ever stops it, so what it
// holds outlives the connection. It is counted once, when started.
func (f *Injector) LeakTimer(hold any) {
	s := f.load()
	if s == nil || s.LeakTimers == 0 {
		return
	}
	f.m.Fault(KindLeakTimer)
	l := &leaked{buf: make([]byte, leakBytes), hold: hold, period: s.LeakTimers}
	// Written through, as real state is: a page never written is never
	// resident, and the leak would not show in the RSS.
	for i := range l.buf {
		l.buf[i] = byte(i)
	}
	// Under mu: a short period can fire before AfterFunc has returned.
	l.mu.Lock()
	l.timer = time.AfterFunc(l.period, l.fire)
	l.mu.Unlock()
}

// leaked is one leaked interval timer and what it holds.
type leaked struct {
	buf    []byte
	hold   any
	period time.Duration
	mu     sync.Mutex // guards buf and timer between the start and each firing
	timer  *time.Timer
}

func (l *leaked) fire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf[0]++ // the interval's work: it touches what it closed over
	_ = l.hold
	l.timer.Reset(l.period)
}

func (f *Injector) roll(p float64, kind string) bool {
	if p <= 0 || rand.Float64() >= p {
		return false
	}
	f.m.Fault(kind)
	return true
}

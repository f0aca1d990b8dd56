// Package faults is the known-bad modes (-fault-reject, -fault-delay,
// -fault-close-after, -fault-drop): each target asks it what to do at the
// points where a fault can strike, and it counts every fault it calls for
// in knowngood_faults_total{kind}, so that a client's failures can be
// reconciled with the faults the server injected.
package faults

import (
	"math/rand/v2"
	"sync"
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

// Injector decides. A nil *Injector (every mode off) injects nothing, so a
// target calls it without checking.
type Injector struct {
	reject, drop float64
	delay        time.Duration
	closeAfter   int
	leak         time.Duration
	m            *metrics.Metrics
}

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

// New returns nil when every mode is off.
func New(fc Modes, m *metrics.Metrics) *Injector {
	if fc.Reject == 0 && fc.Delay == 0 && fc.CloseAfter == 0 && fc.Drop == 0 && fc.LeakTimers == 0 {
		return nil
	}
	return &Injector{reject: fc.Reject, drop: fc.Drop, delay: fc.Delay, closeAfter: fc.CloseAfter, leak: fc.LeakTimers, m: m}
}

// Reject reports whether this handshake is to be refused, and counts it.
func (f *Injector) Reject() bool { return f.roll(f.rejectP(), KindReject) }

// Drop reports whether this message is to be dropped, and counts it.
func (f *Injector) Drop() bool { return f.roll(f.dropP(), KindDrop) }

// Delay is how long to hold this message (0 = none), counted when not 0.
func (f *Injector) Delay() time.Duration {
	if f == nil || f.delay == 0 {
		return 0
	}
	f.m.Fault(KindDelay)
	return f.delay
}

// LeakTimer, with -fault-leak-timers, starts the known-bad interval timer
// of a new connection: every period it touches its 64 KiB and keeps hold
// alive (the connection's socket), and nothing ever stops it, so what it
// holds outlives the connection. It is counted once, when started.
func (f *Injector) LeakTimer(hold any) {
	if f == nil || f.leak == 0 {
		return
	}
	f.m.Fault(KindLeakTimer)
	l := &leaked{buf: make([]byte, leakBytes), hold: hold, period: f.leak}
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

// Delaying reports whether messages are delayed, without counting.
func (f *Injector) Delaying() bool { return f != nil && f.delay > 0 }

// CloseAfter reports whether a connection that has now handled n messages
// is to be closed, and counts it (once per connection: it is true for n
// equal to -fault-close-after only).
func (f *Injector) CloseAfter(n int) bool {
	if f == nil || f.closeAfter == 0 || n != f.closeAfter {
		return false
	}
	f.m.Fault(KindCloseAfter)
	return true
}

// Message is the fate of a connection's n-th message (from 1): dropped, or
// handled and then, maybe, the connection closed. The order is fixed so that
// every target agrees: a dropped message still counts towards
// -fault-close-after.
func (f *Injector) Message(n int) (drop, closeAfter bool) {
	if f == nil {
		return false, false
	}
	return f.Drop(), f.CloseAfter(n)
}

func (f *Injector) rejectP() float64 {
	if f == nil {
		return 0
	}
	return f.reject
}

func (f *Injector) dropP() float64 {
	if f == nil {
		return 0
	}
	return f.drop
}

func (f *Injector) roll(p float64, kind string) bool {
	if p <= 0 || rand.Float64() >= p {
		return false
	}
	f.m.Fault(kind)
	return true
}

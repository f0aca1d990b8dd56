package wsserver

import (
	"net/http"
	"time"

	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// faultReject is the answer to a handshake that -fault-reject picked.
func faultReject() *refusal {
	return &refusal{status: http.StatusServiceUnavailable, msg: "fault injected (-fault-reject)", result: protocol.ResultRejected}
}

// delayer runs f once d has passed, in order, on the connection's writer:
// a goroutine of the connection's own for gorilla and coder, the event loop
// for gnet.
type delayer interface {
	after(d time.Duration, f func())
}

// faultSession applies -fault-drop, -fault-delay and -fault-close-after to
// the messages of one connection before its session sees them. Its Message
// is called by one goroutine at a time (the reader, or gnet's loop).
type faultSession struct {
	Session
	p      Peer
	f      *faults.Injector
	later  delayer
	n      int  // messages received
	closed bool // -fault-close-after has struck: the rest are ignored
}

// withFaults wraps s when a known-bad mode is on; s itself otherwise.
func withFaults(s Session, p Peer, f *faults.Injector, later delayer) Session {
	if f == nil {
		return s
	}
	return &faultSession{Session: s, p: p, f: f, later: later}
}

func (s *faultSession) Message(op Op, data []byte) {
	if s.closed {
		return
	}
	s.n++
	drop, closeAfter := s.f.Message(s.n)
	s.closed = closeAfter
	deliver := func(data []byte) {
		if !drop {
			s.Session.Message(op, data)
		}
		if closeAfter {
			// After the reply: a client sees n echoes, then 1011.
			if dc, ok := s.p.(drainCloser); ok {
				dc.closeAfterQueue(faults.CloseCode)
			} else {
				s.p.Close(faults.CloseCode)
			}
		}
	}
	if !drop {
		if d := s.f.Delay(); d > 0 {
			data = append([]byte(nil), data...)
			s.later.after(d, func() { deliver(data) })
			return
		}
	}
	deliver(data)
}

// delayQueue is the delayer of a gorilla or coder connection: one goroutine
// that runs the delayed deliveries in order, so that it is the connection's
// one writer of replies (the reader then writes none). A full queue holds
// the reader back, as a slow handler would.
type delayQueue struct {
	ch   chan delayed
	done chan struct{}
}

type delayed struct {
	due time.Time
	f   func()
}

func newDelayQueue() *delayQueue {
	q := &delayQueue{ch: make(chan delayed, 1024), done: make(chan struct{})}
	go q.run()
	return q
}

func (q *delayQueue) after(d time.Duration, f func()) {
	select {
	case q.ch <- delayed{time.Now().Add(d), f}:
	case <-q.done:
	}
}

func (q *delayQueue) run() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case e := <-q.ch:
			if wait := time.Until(e.due); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-q.done:
					return
				}
			}
			e.f()
		case <-q.done:
			return
		}
	}
}

// stop ends the goroutine without waiting for it: it may be in a write to a
// client that does not read, which ends when the connection is closed.
func (q *delayQueue) stop() { close(q.done) }

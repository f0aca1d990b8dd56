package wsserver

import (
	"bytes"
	"net/http"
	"time"

	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// faultReject is the answer to a handshake that -fault-reject picked.
func faultReject() *refusal {
	return &refusal{status: http.StatusServiceUnavailable, msg: "fault injected (-fault-reject)", result: protocol.ResultRejected}
}

// connFaults is what the known-bad modes keep of one connection. It is
// made by the first message the connection receives while a mode is on:
// one that never meets a mode carries a nil pointer. Only the
// connection's reader (gnet: its loop) touches it.
type connFaults struct {
	count  faults.Count // messages towards -fault-close-after
	closed bool         // -fault-close-after has struck: the messages after it are ignored
	// held holds the deliveries -fault-delay holds back; nil until the
	// first delay.
	held delayer
}

// delayer holds a connection's delayed deliveries and runs them in order,
// on the connection's writer: a goroutine of the connection's own for
// gorilla, coder and nbio, the event loop for gnet.
type delayer interface {
	// after runs f once d has passed and whatever was handed over before
	// has run.
	after(d time.Duration, f func())
	// holding reports whether a delivery that is not delayed must still
	// go through after, behind the others: while some are waiting on
	// gnet; for good on the net/http libraries, whose delayer, once made,
	// is the connection's one writer of replies.
	holding() bool
	// stop drops what is held, once the connection has ended.
	stop()
}

// faultHost is a connection as the known-bad modes act on it: gorilla's,
// coder's and nbio's (httpPeer), gnet's (gconn).
type faultHost interface {
	// closeAfterQueue closes with code once what the connection has
	// queued is written (-fault-close-after: the client sees its n
	// replies, then 1011), where Close drops the queue (a slow client).
	closeAfterQueue(code int)
	// newDelayer makes the connection's delayer, on its first delay.
	newDelayer() delayer
}

// faultMessage hands one message to s with the known-bad modes in force
// applied, as one look at them decides (faults.Injector.Message):
// -fault-drop drops it, -fault-delay hands it over that much later,
// -fault-close-after closes the connection after it. Once a delay has
// been made, the messages after it wait behind it, whatever the modes in
// force then: a change of the modes never reorders a connection's
// replies.
func faultMessage(f *faults.Injector, cf *connFaults, h faultHost, s Session, op Op, data []byte) {
	if cf.closed {
		return
	}
	fate := f.Message(&cf.count)
	cf.closed = fate.Close
	if fate.Drop && !fate.Close {
		return
	}
	if fate.Delay == 0 && (cf.held == nil || !cf.held.holding()) {
		deliver(fate, h, s, op, data)
		return
	}
	if cf.held == nil {
		cf.held = h.newDelayer()
	}
	data = bytes.Clone(data) // data is valid only during the call
	cf.held.after(fate.Delay, func() { deliver(fate, h, s, op, data) })
}

// deliver hands a message to s as its fate says, then closes the
// connection if it says so: after the reply, so that a client sees n
// echoes, then 1011.
func deliver(fate faults.Fate, h faultHost, s Session, op Op, data []byte) {
	if !fate.Drop {
		s.Message(op, data)
	}
	if fate.Close {
		h.closeAfterQueue(faults.CloseCode)
	}
}

// stopFaults drops what cf holds, once the connection has ended.
func stopFaults(cf *connFaults) {
	if cf != nil && cf.held != nil {
		cf.held.stop()
	}
}

// delayQueue is the delayer of a gorilla, coder or nbio connection: one
// goroutine that runs the delayed deliveries in order, so that it is the
// connection's one writer of replies (the reader then writes none). A
// full queue holds the reader back, as a slow handler would.
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

// holding: the queue's goroutine is the connection's writer of replies
// from its first delay to the end.
func (q *delayQueue) holding() bool { return true }

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

package socketio

import (
	"sync"
	"sync/atomic"

	"github.com/knowngood/knowngood/shared/config"
)

// loop is the blocking model's one event loop, standing in for the single
// thread of an asyncio or Node server: whoever holds it (a turn) runs
// alone, and the others wait for it in the order they came. Turns are
// taken by what the real servers run on their loop: a request arriving,
// the bytes of a WebSocket read (freeze.go), and a connect handler's
// synchronous call, which holds its turn for -delay. So while a handler
// sleeps, nothing else the loop serves moves.
//
// When an answer leaves is the model's write discipline (writable):
// asyncio writes only once the turns held or waiting when it was made have
// ended, as python-socketio's queued writers on uvicorn's loop run after
// the work already ready; node writes at once, in the turn that produced
// it, as Node's socket.io does.
//
// The waiters are goroutines that exist anyway (a connection's reader, a
// request's handler) or a connect waiting for its turn, at most one per
// session and namespace (connectTurns).
type loop struct {
	model string // config.BlockingAsyncio or config.BlockingNode

	mu      sync.Mutex
	owned   bool
	waiters []chan struct{}
	// issued counts the turns asked for, finished those ended; barriers
	// are the writes waiting for a count of finished turns, in order.
	issued, finished uint64
	barriers         []barrier
	stopped          bool
	// done is closed when the loop stops (shutdown): every wait ends.
	done chan struct{}
	// holding serialises the handlers' sleeps: two connects read in one
	// turn (two namespaces in one chunk) hold the loop one after the other.
	holding sync.Mutex
}

// barrier is a write waiting until the turns before it have ended.
type barrier struct {
	after uint64 // the issued count when the write was made
	ready chan struct{}
}

func newLoop(model string) *loop {
	return &loop{model: model, done: make(chan struct{})}
}

// turn is one hold of the loop. It ends when every part of the work that
// took it is done: the reader or request that took it, and the handlers
// it started (extend).
type turn struct {
	l    *loop
	refs atomic.Int32
}

// acquire waits for the caller's turn: at once when the loop is free,
// else after every turn asked for before it. A stopped loop waits for
// nothing.
func (l *loop) acquire() *turn {
	t := &turn{l: l}
	t.refs.Store(1)
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return t
	}
	l.issued++
	if !l.owned {
		l.owned = true
		l.mu.Unlock()
		return t
	}
	mine := make(chan struct{})
	l.waiters = append(l.waiters, mine)
	l.mu.Unlock()
	select {
	case <-mine: // handed over by release
	case <-l.done:
	}
	return t
}

// release hands the loop to the first waiter, or leaves it idle.
func (l *loop) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.finished++
	for len(l.barriers) > 0 && l.barriers[0].after <= l.finished {
		close(l.barriers[0].ready)
		l.barriers[0] = barrier{}
		l.barriers = l.barriers[1:]
	}
	if len(l.waiters) > 0 {
		next := l.waiters[0]
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		close(next)
		return
	}
	l.owned = false
}

// extend adds work to a turn still held; false when it has ended.
func (t *turn) extend() bool {
	for {
		refs := t.refs.Load()
		if refs == 0 {
			return false
		}
		if t.refs.CompareAndSwap(refs, refs+1) {
			return true
		}
	}
}

// done ends one part of the turn's work; the last hands the loop on.
func (t *turn) done() {
	if t.refs.Add(-1) == 0 {
		t.l.release()
	}
}

// writable is when a write made now may leave under the model: closed at
// once under node; under asyncio, once every turn held or asked for now
// has ended (or the loop has stopped). That is asyncio's pass: a
// callback made ready now runs after those already ready, so an answer
// that a handler makes during a burst waits for the rest of the burst,
// and the burst's answers leave together.
func (l *loop) writable() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.model != config.BlockingAsyncio || l.finished == l.issued {
		return closed
	}
	if l.stopped {
		return l.done
	}
	b := barrier{after: l.issued, ready: make(chan struct{})}
	l.barriers = append(l.barriers, b)
	return b.ready
}

// closed is a channel that never blocks.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// stop ends the loop: every turn and write waiting on it goes on, and
// nothing waits again. A nil loop (the other models) does nothing.
func (l *loop) stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.stopped = true
		close(l.done)
		for _, b := range l.barriers {
			close(b.ready)
		}
		l.barriers = nil
	}
}

// turnSlot is the turn a session's reader or request holds now, if any:
// a connect handler that its packet starts runs in that turn, as the
// real servers run the middleware in the same pass as the read. left is
// set once the session's WebSocket has ended on the client's side, which
// the engine, frozen, may not have read yet. answered keeps whether the
// client was still there when the session's first connect handler ended.
type turnSlot struct {
	current  atomic.Pointer[turn]
	left     atomic.Bool
	answered atomic.Int32 // answerUnknown, answerPresent or answerGone
}

const (
	answerUnknown int32 = iota
	answerPresent
	answerGone
)

// gone reports whether the slot's client has left (false for no slot).
func (s *turnSlot) gone() bool { return s != nil && s.left.Load() }

// handled records, for the session's first connect handler to end,
// whether its client was still there: the ack is made from that moment
// on, so a client that leaves later had its handshake completed, even if
// it left before the settling saw the ack leave (a later barrier, when
// other turns were asked for in between).
func (s *turnSlot) handled() {
	if s == nil {
		return
	}
	answer := answerPresent
	if s.left.Load() {
		answer = answerGone
	}
	s.answered.CompareAndSwap(answerUnknown, answer)
}

// goneBeforeAnswer reports whether the client had left before its first
// connect handler ended; before any ended, whether it has left.
func (s *turnSlot) goneBeforeAnswer() bool {
	if s == nil {
		return false
	}
	switch s.answered.Load() {
	case answerPresent:
		return false
	case answerGone:
		return true
	}
	return s.left.Load()
}

// hold runs task (a connect handler: sleep, then answer) holding the
// loop: in the turn of the session's read or request if it is still
// held, else in a turn of its own, after those asked for before it.
func (l *loop) hold(slot *turnSlot, task func()) {
	if slot != nil {
		if t := slot.current.Load(); t != nil && t.extend() {
			go l.run(t, task)
			return
		}
	}
	go func() { l.run(l.acquire(), task) }()
}

// run runs task in turn t, unless the loop has stopped (shutdown): a
// connect still waiting then is never answered, as its session closes.
func (l *loop) run(t *turn, task func()) {
	defer t.done()
	l.holding.Lock()
	defer l.holding.Unlock()
	select {
	case <-l.done:
	default:
		task()
	}
}

package socketio

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zishang520/socket.io/servers/socket/v3"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// holdLoop is one connect handler's synchronous call: it sleeps on the
// loop for delay, whether or not its client is still there (present).
func holdLoop(delay time.Duration, m *metrics.Metrics, present bool) {
	client := metrics.HoldPresent
	if !present {
		client = metrics.HoldGone
	}
	m.LoopHold(client)
	time.Sleep(delay)
}

// settleHandshake counts a session's first CONNECT ack, once: ok, after
// took, or abandoned when its client had gone before the ack was made.
func settleHandshake(m *metrics.Metrics, settled *atomic.Bool, transport string, took time.Duration, gone bool) {
	if !settled.CompareAndSwap(false, true) {
		return
	}
	if gone {
		m.Handshake(protocol.ResultAbandoned, transport, 0)
		return
	}
	m.Handshake(protocol.ResultOK, transport, took)
}

// openLeft counts an open request whose client left before the frozen
// loop got to it: an abandoned handshake, by the transport it named.
func openLeft(m *metrics.Metrics, cfg Options, r *http.Request) {
	transport := r.URL.Query().Get("transport")
	if !slices.Contains(cfg.Transports, transport) {
		transport = "invalid"
	}
	m.Handshake(protocol.ResultAbandoned, transport, 0)
}

// maxRepeatedConnects bounds the CONNECTs for one namespace that a session
// may send while its first one waits in the loop.
const maxRepeatedConnects = 4

// connectTurns is a session's places in the blocking model's loop, one
// per namespace: the first CONNECT takes it, repeated ones wait with it.
// E is the engine's connect error type; its zero value accepts.
type connectTurns[E any] struct {
	mu       sync.Mutex
	repeated map[string][]func(E) // by namespace, while its turn is queued
}

// take runs nsp's connect on l (in the turn of slot's read or request
// while it lasts, else in a turn of its own): hold, then next and every
// repeat that came meanwhile are answered. It runs nothing and reports
// false when maxRepeatedConnects repeats already wait: the caller closes
// the session.
func (t *connectTurns[E]) take(l *loop, slot *turnSlot, nsp string, next func(E), hold func()) bool {
	t.mu.Lock()
	if waiting, queued := t.repeated[nsp]; queued {
		ok := len(waiting) < maxRepeatedConnects
		if ok {
			t.repeated[nsp] = append(waiting, next)
		}
		t.mu.Unlock()
		return ok
	}
	if t.repeated == nil {
		t.repeated = map[string][]func(E){}
	}
	t.repeated[nsp] = nil
	t.mu.Unlock()
	l.hold(slot, func() {
		hold()
		slot.handled()
		var accept E
		next(accept)
		t.mu.Lock()
		waiting := t.repeated[nsp]
		delete(t.repeated, nsp)
		t.mu.Unlock()
		for _, next := range waiting {
			next(accept)
		}
	})
	return true
}

// takeTurn queues a connect on the blocking model's loop. A session holds
// at most one place per namespace: Node's socket.io runs the middleware
// again for a CONNECT repeated while the first is pending (the client gets
// two acks), and a session writing hundreds of them in one packet would
// hold the one loop for hundreds of delays, for every other client. Here a
// repeated CONNECT is answered with the first, after the same turn, and
// more than maxRepeatedConnects of them close the session, as Node closes
// one that repeats a CONNECT once joined. A connect whose session has
// closed meanwhile still holds the loop when its turn comes, as in both
// real servers, and is counted as a hold whose client had gone.
func (s *Server) takeTurn(sock *socket.Socket, next func(*socket.ExtendedError)) {
	conn := sock.Conn()
	v, ok := s.sessions.Load(conn.Id())
	if !ok {
		s.loop.hold(nil, func() { holdLoop(s.cfg.Delay, s.m, false); next(nil) })
		return
	}
	sess := v.(*session)
	hold := func() { holdLoop(s.cfg.Delay, s.m, conn.ReadyState() == "open" && !sess.slot.gone()) }
	if !sess.turns.take(s.loop, sess.slot, sock.Nsp().Name(), next, hold) {
		conn.Close(false)
	}
}

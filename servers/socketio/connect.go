package socketio

import (
	"fmt"
	"sync"
	"time"

	"github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/servers/socket/v3"
)

// connectMiddleware returns the namespace middleware of a connect model
// (none for empty).
// The delay lives here, in io.Use, because zishang520/socket.io writes the
// CONNECT ack before io.On("connection") fires: a delay placed there would
// never be seen by a client.
func (s *Server) connectMiddleware(mode Mode) (socket.NamespaceMiddleware, error) {
	delay := s.cfg.SocketIO.Delay
	switch mode {
	case Empty:
		// No middleware: the library then goes on to the connect at once,
		// as next(nil) would, without building the middleware chain's
		// closures on every connect.
		return nil, nil
	case Async:
		// Each connect waits on its own timer; nothing else waits.
		return func(_ *socket.Socket, next func(*socket.ExtendedError)) {
			time.AfterFunc(delay, func() { next(nil) })
		}, nil
	case Blocking:
		// Each connect takes its turn on the one loop and holds it for the
		// delay, as a synchronous call in an asyncio or Node handler holds
		// the event loop. The library's reader goroutine only queues.
		return func(sock *socket.Socket, next func(*socket.ExtendedError)) {
			s.takeTurn(sock, next)
		}, nil
	}
	return nil, fmt.Errorf("unknown connect model %q", mode)
}

// maxRepeatedConnects bounds the CONNECTs for one namespace that a session
// may send while its first one waits in the loop.
const maxRepeatedConnects = 4

// connectTurn is a session's place in the loop for one namespace: the
// first CONNECT takes it, repeated ones wait with it.
type connectTurn struct {
	repeated []func(*socket.ExtendedError)
}

// takeTurn queues a connect on the blocking model's loop. A session holds
// at most one place per namespace: Node's socket.io runs the middleware
// again for a CONNECT repeated while the first is pending (the client gets
// two acks), and a session writing hundreds of them in one packet would
// hold the one loop for hundreds of delays, for every other client. Here a
// repeated CONNECT is answered with the first, after the same turn, and
// more than maxRepeatedConnects of them close the session, as Node closes
// one that repeats a CONNECT once joined. A connect whose session has
// closed meanwhile leaves the loop without holding it (the session counted
// its handshake when it closed).
func (s *Server) takeTurn(sock *socket.Socket, next func(*socket.ExtendedError)) {
	conn := sock.Conn()
	v, ok := s.sessions.Load(conn.Id())
	if !ok {
		s.loop.enqueue(func() { s.hold(conn, next) })
		return
	}
	sess := v.(*session)
	nsp := sock.Nsp().Name()
	sess.mu.Lock()
	if turn := sess.turns[nsp]; turn != nil {
		if len(turn.repeated) < maxRepeatedConnects {
			turn.repeated = append(turn.repeated, next)
			sess.mu.Unlock()
			return
		}
		sess.mu.Unlock()
		conn.Close(false)
		return
	}
	turn := &connectTurn{}
	if sess.turns == nil {
		sess.turns = map[string]*connectTurn{}
	}
	sess.turns[nsp] = turn
	sess.mu.Unlock()
	s.loop.enqueue(func() {
		s.hold(conn, next)
		sess.mu.Lock()
		delete(sess.turns, nsp)
		repeated := turn.repeated
		sess.mu.Unlock()
		for _, next := range repeated {
			next(nil)
		}
	})
}

// hold is one turn of the loop: -delay, unless the session has gone.
func (s *Server) hold(conn engine.Socket, next func(*socket.ExtendedError)) {
	if conn.ReadyState() == "open" {
		time.Sleep(s.cfg.SocketIO.Delay)
	}
	next(nil)
}

// loop is a single-threaded event loop: one goroutine runs queued tasks in
// FIFO order, one at a time. The queue is unbounded so that enqueue never
// blocks the caller, whatever the number of waiting connects.
type loop struct {
	mu      sync.Mutex
	wake    *sync.Cond
	tasks   []func()
	stopped bool
	done    chan struct{}
}

func newLoop() *loop {
	l := &loop{done: make(chan struct{})}
	l.wake = sync.NewCond(&l.mu)
	go l.run()
	return l
}

func (l *loop) enqueue(task func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.tasks = append(l.tasks, task)
	l.wake.Signal()
}

func (l *loop) run() {
	defer close(l.done)
	for {
		l.mu.Lock()
		for len(l.tasks) == 0 && !l.stopped {
			l.wake.Wait()
		}
		if l.stopped {
			l.tasks = nil
			l.mu.Unlock()
			return
		}
		task := l.tasks[0]
		l.tasks[0] = nil
		l.tasks = l.tasks[1:]
		l.mu.Unlock()
		task()
	}
}

// stop drops the tasks still queued, waits for the running one, and ends
// the loop. A nil loop (the other models) does nothing.
func (l *loop) stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.stopped = true
	l.wake.Signal()
	l.mu.Unlock()
	<-l.done
}

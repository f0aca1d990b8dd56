package socketio

import (
	"fmt"
	"sync"
	"time"

	"github.com/zishang520/socket.io/servers/socket/v3"
)

// connectMiddleware returns the namespace middleware of a connect model.
// The delay lives here, in io.Use, because zishang520/socket.io writes the
// CONNECT ack before io.On("connection") fires: a delay placed there would
// never be seen by a client.
func (s *Server) connectMiddleware(mode Mode) (socket.NamespaceMiddleware, error) {
	delay := s.cfg.Delay
	switch mode {
	case Empty:
		return func(_ *socket.Socket, next func(*socket.ExtendedError)) { next(nil) }, nil
	case Async:
		// Each connect waits on its own timer; nothing else waits.
		return func(_ *socket.Socket, next func(*socket.ExtendedError)) {
			time.AfterFunc(delay, func() { next(nil) })
		}, nil
	case Blocking:
		// Each connect takes its turn on the one loop and holds it for the
		// delay, as a synchronous call in an asyncio or Node handler holds
		// the event loop. The library's reader goroutine only queues.
		return func(_ *socket.Socket, next func(*socket.ExtendedError)) {
			s.loop.enqueue(func() {
				time.Sleep(delay)
				next(nil)
			})
		}, nil
	}
	return nil, fmt.Errorf("unknown connect model %q", mode)
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

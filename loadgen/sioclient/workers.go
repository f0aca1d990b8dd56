package sioclient

import "sync"

// Workers runs the goroutines that the connections given it (Options.Workers)
// start to open their transports, on goroutines that stay for the next one
// once they are done. A goroutine that dials grows its stack through the
// dialer, the resolver and the WebSocket upgrade; a new goroutine for every
// connection pays that growth (a stack copy, and fresh stack memory) every
// time, and on a burst of handshakes it was a sixth of the client's CPU. A
// worker that already grew pays it once. No more goroutines run than a new
// goroutine for each would have: a job starts a worker only when none is
// idle.
//
// The zero value is ready. Close it once the connections are closed: it
// ends the idle workers, and a busy one ends with its job.
type Workers struct {
	mu     sync.Mutex
	idle   []chan func()
	closed bool
}

// Go runs f on an idle worker, or a new one. A nil Workers (and a closed
// one) runs f on a goroutine of its own.
func (w *Workers) Go(f func()) {
	if w == nil {
		go f()
		return
	}
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		next := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		next <- f // buffered: the worker is waiting for it
		return
	}
	w.mu.Unlock()
	go w.work(f)
}

func (w *Workers) work(f func()) {
	next := make(chan func(), 1)
	for f != nil {
		f()
		f = nil // let it go while idle
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		w.idle = append(w.idle, next)
		w.mu.Unlock()
		f = <-next // nil once closed
	}
}

// Close ends the idle workers; a busy one ends once its job is done. It
// does not wait for those: a Conn's Close does (a dial the server never
// answers outlives it, as a goroutine of its own would). Go still runs
// jobs after it, each on a worker that ends with its job.
func (w *Workers) Close() {
	w.mu.Lock()
	w.closed = true
	idle := w.idle
	w.idle = nil
	w.mu.Unlock()
	for _, next := range idle {
		close(next)
	}
}

package conns

import (
	"net"
	"sync"
	"sync/atomic"
)

// Listening holds a target's listener between Serve and Shutdown, which
// may come in either order, or at once: a Serve after Shutdown must not
// accept, and a Shutdown after Serve must close what Serve accepts from.
// The zero value is ready.
type Listening struct {
	mu      sync.Mutex
	ln      net.Listener
	closing atomic.Bool
}

// Start records ln for Stop. It is false when Stop came first: Serve
// then closes ln and returns.
func (l *Listening) Start(ln net.Listener) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ln = ln
	return !l.closing.Load()
}

// Closing says whether Stop has been called: the target is shutting down.
func (l *Listening) Closing() bool { return l.closing.Load() }

// Stop marks the target as shutting down and returns the listener Start
// recorded, for the caller to close; nil before Start.
func (l *Listening) Stop() net.Listener {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closing.Store(true)
	return l.ln
}

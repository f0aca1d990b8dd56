package lifecycletest

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// Writes watches a target's writes: its Wrap (for Options.Wrap) counts
// the writes on every connection the target accepts, and makes them wait
// while held. The wrapped connections keep *net.TCPConn's SyscallConn, as
// the target's own connections have it. gnet writes from its loops on a
// duplicate of the socket, unseen by any wrapper.
type Writes struct {
	n       atomic.Int64
	waiting atomic.Int64
	held    atomic.Bool
	release chan struct{}
	once    sync.Once
}

func NewWrites() *Writes { return &Writes{release: make(chan struct{})} }

// Wrap is Options.Wrap.
func (w *Writes) Wrap(l net.Listener) net.Listener { return &writesListener{Listener: l, w: w} }

// Count is the writes made so far, not counting those held.
func (w *Writes) Count() int64 { return w.n.Load() }

// Waiting is the writes waiting at the hold now.
func (w *Writes) Waiting() int64 { return w.waiting.Load() }

// Hold makes every write from now on wait until Release.
func (w *Writes) Hold() { w.held.Store(true) }

// Release lets the held writes go, and any later ones; once only.
func (w *Writes) Release() { w.once.Do(func() { close(w.release) }) }

type writesListener struct {
	net.Listener
	w *Writes
}

func (l *writesListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("accepted a %T, not a TCP connection", c)
	}
	return &writesConn{TCPConn: tc, w: l.w}, nil
}

type writesConn struct {
	*net.TCPConn
	w *Writes
}

func (c *writesConn) Write(p []byte) (int, error) {
	if c.w.held.Load() {
		c.w.waiting.Add(1)
		<-c.w.release
		c.w.waiting.Add(-1)
	}
	c.w.n.Add(1)
	return c.TCPConn.Write(p)
}

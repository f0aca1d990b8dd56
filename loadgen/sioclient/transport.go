package sioclient

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// transportSet returns the transports for a selection: the client's
// WebSocket transport behind a gatedTransport, and this package's polling
// transport. wrap, in tests, wraps the client's WebSocket constructor.
func transportSet(name string, g *gate, o Options) (*types.Set[engine.TransportCtor], error) {
	ws := engine.TransportCtor(socket.WebSocket)
	if o.wrapTransport != nil {
		ws = o.wrapTransport(ws)
	}
	websocket := &gatedCtor{TransportCtor: ws, gate: g, workers: o.Workers}
	polling := &pollingCtor{gate: g, timeout: o.PollTimeout}
	var ctors []engine.TransportCtor
	switch name {
	case WebSocket:
		ctors = []engine.TransportCtor{websocket}
	case Polling:
		ctors = []engine.TransportCtor{polling}
	case PollingWebSocket:
		ctors = []engine.TransportCtor{polling, websocket}
	default:
		return nil, fmt.Errorf("bad transport %q: want %s", name, strings.Join(Transports, ", "))
	}
	return types.NewSet(ctors...), nil
}

// gate holds back the opening of a connection's transports until its
// listeners are attached, and counts the goroutines that this package starts
// for the connection, so that Close can wait for them.
type gate struct {
	open chan struct{}
	once sync.Once

	mu       sync.Mutex
	closing  bool
	busy     int
	finished bool          // closing and no goroutine left: none may start
	idle     chan struct{} // closed when finished
}

func newGate() *gate { return &gate{open: make(chan struct{}), idle: make(chan struct{})} }

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// start counts one more goroutine. While the connection closes, goroutines
// may still start (a close can take a few writes: the DISCONNECT waits for
// the write before it, then the CLOSE); once the last one is done, none can.
func (g *gate) start() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return false
	}
	g.busy++
	return true
}

// done counts one goroutine less.
func (g *gate) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy--
	g.finishIfIdle()
}

func (g *gate) finishIfIdle() {
	if g.closing && g.busy == 0 && !g.finished {
		g.finished = true
		close(g.idle)
	}
}

// wait marks the connection closing, lets any transport still held back see
// that it is closed, and waits (at most timeout) until no goroutine is left.
// It reports whether none is. It is safe to call twice.
func (g *gate) wait(timeout time.Duration) bool {
	g.mu.Lock()
	g.closing = true
	g.finishIfIdle()
	g.mu.Unlock()
	g.release()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-g.idle:
		return true
	case <-t.C:
		return false
	}
}

// gatedCtor builds wrapped transports.
type gatedCtor struct {
	engine.TransportCtor
	gate    *gate
	workers *Workers
}

func (c *gatedCtor) New(s engine.Socket, opts engine.SocketOptionsInterface) engine.Transport {
	return &gatedTransport{Transport: c.TransportCtor.New(s, opts), gate: c.gate, engine: s, workers: c.workers}
}

// gatedTransport wraps the client's WebSocket transport to fix two races:
//
//   - Open returns at once. The real Open (a blocking dial) runs on its own
//     goroutine once the gate is released, that is once the Manager has
//     subscribed to the Engine.IO socket. A Close that comes first, or
//     during the dial, is honoured once the dial returns (the transport is
//     not safe to close during its dial).
//   - After the real Open, the Engine.IO socket is flushed. The transport
//     starts its reader goroutine before it marks itself writable: when the
//     reader gets the server's OPEN first, the namespace CONNECT is buffered
//     on a transport that is not writable yet, and nothing flushes it until
//     the next ping (25 s by default).
type gatedTransport struct {
	engine.Transport
	gate    *gate
	engine  engine.Socket
	workers *Workers // runs the opening goroutine; nil: a new one

	mu      sync.Mutex
	closed  bool
	opening bool // the real Open runs
}

func (t *gatedTransport) Open() engine.Transport {
	if !t.gate.start() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		return t
	}
	t.workers.Go(func() {
		defer t.gate.done()
		<-t.gate.open
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return
		}
		t.opening = true
		t.mu.Unlock()

		t.Transport.Open()

		t.mu.Lock()
		t.opening = false
		closed := t.closed
		t.mu.Unlock()
		if closed {
			// Closed while dialling: Close left it to us, now that the
			// dial has returned (the transport is not safe to close
			// during its dial).
			t.Transport.Close()
			return
		}
		t.engine.Flush()
	})
	return t
}

func (t *gatedTransport) Close() engine.Transport {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return t
	}
	t.closed = true
	opening := t.opening
	t.mu.Unlock()
	if opening {
		return t // the opening goroutine closes it
	}
	t.Transport.Close()
	return t
}

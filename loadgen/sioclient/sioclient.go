// Package sioclient opens Socket.IO connections with the zishang520 Go client
// (github.com/zishang520/socket.io/clients/socket/v3) in a way that works when
// many connect at once, and that leaves no goroutine behind.
//
// Used as its README shows, that client loses connections and stalls; this
// package works around each cause it found:
//
//   - Transports left unset: the client picks from a set that includes
//     WebTransport, in map order, and hangs on it against an HTTP/1.1
//     server (about one connection in eight, measured in
//     scripts/bench/README.md). Options.Transport is explicit.
//   - A lost Engine.IO open: the Manager creates its Engine.IO socket, which
//     opens its transport synchronously (the WebSocket dial runs inside the
//     constructor) and starts the transport's reader goroutine, and only then
//     subscribes to the socket's "open" event. When the reader gets the
//     server's OPEN first, the event is gone and the namespace CONNECT is
//     never sent. A dial error is lost the same way (a refused connection
//     shows up as a timeout). Every transport here opens on its own
//     goroutine once Dial has attached every listener (see gate).
//   - A CONNECT left in the write buffer: the WebSocket transport marks itself
//     writable only after starting its reader; when the reader wins, the
//     CONNECT waits for the next ping (25 s). The socket is flushed once the
//     transport is open (see gatedTransport).
//   - Polling: the client's polling transport runs the long-poll GET and the
//     POSTs on one queue, so every emit after the handshake waits for the
//     server's next ping, and it cannot cancel a request. This package has
//     its own polling transport (see pollingTransport).
//   - An upgrade that never ends: polling,websocket pauses the polling
//     transport once the WebSocket answers its probe, until the pending GET
//     and POST are done; one that ended just as the pause began went unseen,
//     and the transport neither polled again nor upgraded, so nothing the
//     server sent after reached the client (see Pause).
//   - A CONNECT_ERROR without a data field (the official server's "Invalid
//     namespace") reads "missing 'data' field"; Wait reports its message.
//   - A close before the CONNECT: a transport that closes before the
//     namespace CONNECT (the server went away mid-handshake) gives the
//     socket no connect_error; Wait reports the Manager's close instead of
//     waiting for its deadline.
//   - Listeners after the fact: with autoConnect (the default) the connection
//     starts before the caller can attach "connect" and "connect_error".
//
// Reconnection is off, every connection has its own Manager (forceNew, no
// multiplexing), and Close waits for the goroutines this package started.
package sioclient

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
)

// Transport selections, as the flags spell them.
const (
	WebSocket        = "websocket"
	Polling          = "polling"
	PollingWebSocket = "polling,websocket" // polling first, then upgrade
)

// Transports lists the accepted values of Options.Transport.
var Transports = []string{WebSocket, Polling, PollingWebSocket}

// ErrStillClosing is the error of a Close that gave up waiting.
var ErrStillClosing = errors.New("still closing")

// Defaults of Options.
const (
	DefaultCloseTimeout = 5 * time.Second
	DefaultPollTimeout  = 60 * time.Second
)

// ErrDeadline is the error of a connection that neither connected nor
// failed before its deadline.
var ErrDeadline = errors.New("deadline exceeded")

// Options describe one connection.
type Options struct {
	URL       string // http(s)://host:port of the server
	Namespace string // "/" when empty
	Path      string // the server's Socket.IO path; "/socket.io/" when empty
	Transport string // one of Transports
	// OpenTimeout bounds the Engine.IO open inside the client (its own
	// "timeout" option, whose error reads "timeout"); the namespace CONNECT
	// is bounded by the context given to Wait. Set it beyond that context's
	// deadline to get ErrDeadline. Zero means 20s, the client's default.
	OpenTimeout time.Duration
	// CloseTimeout bounds Close; zero means DefaultCloseTimeout.
	CloseTimeout time.Duration
	// PollTimeout bounds each long-poll (HTTP GET) of the polling
	// transport. A long-poll lasts up to the server's ping interval (25 s
	// by default): keep it above that. Zero means DefaultPollTimeout.
	PollTimeout time.Duration

	// AckTimeout, when not zero, bounds every acknowledgement the
	// connection waits for (the client's ackTimeout option): an emit whose
	// ack has not come by then gets "operation has timed out".
	AckTimeout time.Duration

	// TLS configures https:// and wss:// connections (the client's own
	// defaults when nil).
	TLS *tls.Config

	// Auth is the auth object sent with the namespace CONNECT; nil for none.
	Auth map[string]any
	// OnSocket, when set, is called with the client's socket before it
	// connects, to attach listeners: an event the server emits as soon as
	// the socket connects would otherwise be missed. Its listeners run
	// before the package's own, so a "connect" listener has run when Wait
	// returns.
	OnSocket func(*socket.Socket)

	// Workers, when set, runs the goroutine that opens a WebSocket
	// transport (its dial and upgrade), so that many connections reuse a
	// few grown goroutines; the caller closes it once the connections are
	// closed. Nil: a new goroutine for each.
	Workers *Workers

	// wrapTransport, in tests, wraps the client's WebSocket transport
	// constructor under the gate.
	wrapTransport func(engine.TransportCtor) engine.TransportCtor
}

// Validate reports the first bad field.
func (o Options) Validate() error {
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("bad URL %q: want http://HOST:PORT", o.URL)
	}
	if o.Namespace != "" && !strings.HasPrefix(o.Namespace, "/") {
		return fmt.Errorf("bad namespace %q: want a path starting with /", o.Namespace)
	}
	if _, err := transportSet(o.Transport, nil, o); err != nil {
		return err
	}
	return nil
}

// Conn is one Socket.IO client connection to one namespace.
type Conn struct {
	mgr          *socket.Manager
	sock         *socket.Socket
	gate         *gate
	result       chan error // the first outcome, unless Await took it
	mu           sync.Mutex
	reported     bool        // the first outcome is in
	waiter       func(error) // Await's, once it is waiting
	closeTimeout time.Duration
	disconnect   sync.Once
	// disconnectReason is the client's reason for the first "disconnect".
	disconnectReason atomic.Pointer[string]
}

// Dial starts a connection and returns at once; Wait reports how it went.
// Whatever happens, Close it. It fails only for bad Options.
func Dial(o Options) (*Conn, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	g := newGate()
	set, _ := transportSet(o.Transport, g, o)
	opts := socket.DefaultOptions()
	opts.SetTransports(set)
	opts.SetUpgrade(o.Transport == PollingWebSocket)
	if o.Path != "" {
		opts.SetPath(o.Path)
	}
	opts.SetReconnection(false)
	opts.SetAutoConnect(false)
	opts.SetForceNew(true)
	opts.SetMultiplex(false)
	if o.OpenTimeout > 0 {
		opts.SetTimeout(o.OpenTimeout)
	}
	if o.AckTimeout > 0 {
		opts.SetAckTimeout(o.AckTimeout)
	}
	if o.Auth != nil {
		opts.SetAuth(o.Auth)
	}
	if o.TLS != nil {
		opts.SetTLSClientConfig(o.TLS)
	}
	ns := o.Namespace
	if ns == "" {
		ns = "/"
	}

	c := &Conn{gate: g, result: make(chan error, 1), closeTimeout: cmp.Or(o.CloseTimeout, DefaultCloseTimeout)}
	c.mgr = socket.NewManager(o.URL, opts)
	c.sock = c.mgr.Socket(ns, opts)
	if o.OnSocket != nil {
		// First, so that its "connect" listener has run when Wait returns.
		o.OnSocket(c.sock)
	}
	// The client turns a CONNECT_ERROR without a data field (the official
	// server's "Invalid namespace") into "missing 'data' field": read the
	// packet's message first.
	c.mgr.On("packet", func(args ...any) {
		if p, ok := FirstArg[*parser.Packet](args); ok && p != nil && p.Type == parser.CONNECT_ERROR && p.Nsp == ns {
			if m, ok := p.Data.(map[string]any); ok {
				if msg, ok := m["message"].(string); ok {
					c.report(errors.New(msg))
				}
			}
		}
	})
	// A transport that closes before the namespace CONNECT (the server
	// went away mid-handshake) gives the socket no connect_error: without
	// this the connection would wait for its deadline.
	c.mgr.On("close", func(args ...any) {
		reason, _ := FirstArg[string](args)
		c.report(fmt.Errorf("closed before the namespace CONNECT (%s)", cmp.Or(reason, "transport close")))
	})
	c.sock.Once("connect", func(...any) { c.report(nil) })
	c.sock.Once("connect_error", func(args ...any) { c.report(connectError(args)) })
	c.sock.Once("disconnect", func(args ...any) {
		reason, _ := FirstArg[string](args)
		if len(args) > 1 && args[1] != nil {
			reason = fmt.Sprintf("%s: %v", reason, args[1])
		}
		c.disconnectReason.Store(&reason)
	})
	c.sock.Connect()
	g.release() // every listener is in place: the transports may open
	return c, nil
}

// report records the first outcome of the connect, or hands it to Await's
// waiter.
func (c *Conn) report(err error) {
	c.mu.Lock()
	if c.reported {
		c.mu.Unlock()
		return
	}
	c.reported = true
	w := c.waiter
	if w == nil {
		c.result <- err // buffered, and only the first is sent
	}
	c.mu.Unlock()
	if w != nil {
		w(err)
	}
}

// Wait waits until the namespace CONNECT is acknowledged (nil), the server or
// the transport refuses it (the client's connect_error), or ctx is done
// (ErrDeadline when past its deadline). On failure it starts closing the
// connection, so that the server sees it go at once. Call it once.
func (c *Conn) Wait(ctx context.Context) error {
	select {
	case err := <-c.result:
		if err != nil {
			c.abandon()
			if ctx.Err() != nil {
				// The client's own open timeout, at the same moment as
				// the deadline: report the deadline.
				return ctxError(ctx)
			}
		}
		return err
	case <-ctx.Done():
		// A connect that raced the deadline still failed it.
		c.abandon()
		return ctxError(ctx)
	}
}

// Await is Wait without a goroutine to block: it returns at once and calls
// done exactly once, with what Wait would have returned, when the namespace
// CONNECT is acknowledged or refused (on the client's goroutine that saw it,
// or on the caller's when that was before Await) or when ctx is done (on a
// goroutine of its own). done must not block. Like Wait, on failure it
// starts closing the connection. Call Await or Wait once, not both.
//
// When the outcome and the end of ctx come together, one of them wins, as
// with Wait's select: a connection that is reported connected is never
// closed by the deadline.
func (c *Conn) Await(ctx context.Context, done func(error)) {
	var settled atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		if settled.CompareAndSwap(false, true) {
			c.abandon()
			done(ctxError(ctx))
		}
	})
	waiter := func(err error) {
		stop()
		if !settled.CompareAndSwap(false, true) {
			return
		}
		if err != nil {
			c.abandon()
			if ctx.Err() != nil {
				// The client's own open timeout, at the same moment as
				// the deadline: report the deadline.
				err = ctxError(ctx)
			}
		}
		done(err)
	}
	c.mu.Lock()
	if c.reported {
		c.mu.Unlock()
		waiter(<-c.result)
		return
	}
	c.waiter = waiter
	c.mu.Unlock()
}

// Connect is Dial and Wait; on failure it closes the connection.
func Connect(ctx context.Context, o Options) (*Conn, error) {
	c, err := Dial(o)
	if err != nil {
		return nil, err
	}
	if err := c.Wait(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// abandon disconnects (sending DISCONNECT when connected) and closes the
// Engine.IO connection, without waiting.
func (c *Conn) abandon() { c.disconnect.Do(func() { c.sock.Disconnect() }) }

// ctxError is ErrDeadline for a context past its deadline, and the
// context's error otherwise (cancelled).
func ctxError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrDeadline
	}
	return ctx.Err()
}

// FirstArg is args[0] as a T, if there is one and it is a T: an event's or an
// ack's first argument as the client decoded it.
func FirstArg[T any](args []any) (T, bool) {
	var zero T
	if len(args) == 0 {
		return zero, false
	}
	v, ok := args[0].(T)
	return v, ok
}

// connectError turns the arguments of a "connect_error" event into an error.
func connectError(args []any) error {
	if len(args) == 0 || args[0] == nil {
		return errors.New("connect_error")
	}
	if err, ok := args[0].(error); ok {
		return err
	}
	return fmt.Errorf("%v", args[0])
}

// Echo emits `echo` with payload and waits for the acknowledgement, which
// must carry payload back.
func (c *Conn) Echo(ctx context.Context, payload string) error {
	got := make(chan error, 1)
	c.sock.EmitWithAck("echo", payload)(func(args []any, err error) {
		switch {
		case err != nil:
			if r := c.disconnectReason.Load(); r != nil {
				err = fmt.Errorf("%w (%s)", err, *r)
			}
		case len(args) != 1 || args[0] != payload:
			err = fmt.Errorf("echo: ack %v, want [%s]", args, payload)
		}
		select {
		case got <- err:
		default:
		}
	})
	select {
	case err := <-got:
		return err
	case <-ctx.Done():
		return ctxError(ctx)
	}
}

// ID is the Socket.IO socket id, empty when not connected.
func (c *Conn) ID() string { return c.sock.Id() }

// Socket is the client's socket, for emitting and listening beyond Echo.
func (c *Conn) Socket() *socket.Socket { return c.sock }

// Close disconnects (sending DISCONNECT when connected), closes the Engine.IO
// connection, and waits until the goroutines that this package started for
// it (a transport's dial, a polling write) are done, so that none is left
// behind. It gives up after Options.CloseTimeout, which only a server that
// never answers a dial makes it reach: that goroutine then ends, closing
// what it opened, when the dial does. It is safe to call twice.
func (c *Conn) Close() error {
	c.abandon()
	if !c.gate.wait(c.closeTimeout) {
		return ErrStillClosing
	}
	return nil
}

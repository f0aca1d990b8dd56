package wsserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
)

// Op is a data message's opcode.
type Op byte

const (
	Text   Op = 1
	Binary Op = 2
)

// Close codes the server sends of its own accord (RFC 6455 7.4.1).
const (
	CloseGoingAway       = 1001 // Shutdown
	ClosePolicyViolation = 1008 // a slow client, for one
)

// Handler gives each new connection its behaviour.
type Handler interface {
	// Open is called once a connection is upgraded, before the client
	// can have read its 101 and before its first message: a client that
	// has seen its 101 finds whatever Open did done (the broadcast hub's
	// join). What Open queues goes out after the 101. On gnet it runs on the connection's event loop, as do
	// Message and Closed: none of them may block.
	Open(p Peer) Session
}

// Session is what a connection does with its messages.
type Session interface {
	// Message handles one whole message that passed the checks (size,
	// UTF-8). data is valid only during the call.
	Message(op Op, data []byte)
	// Closed is called once, when the connection has ended.
	Closed()
}

// NopSession is a Session that does nothing. Embed it in a session to write
// only the hooks it needs: a hook added to Session later then breaks no
// target.
type NopSession struct{}

// Message drops the message.
func (NopSession) Message(Op, []byte) {}

// Closed does nothing.
func (NopSession) Closed() {}

// Echo is the handler that sends every message back as it came, written
// by the reader that read it: the least a handler can do. The echo
// targets serve it, and this package's tests measure the layer with it.
// It holds no state, so one session serves every connection.
type Echo struct{}

// Open returns the connection's echoing session.
func (Echo) Open(p Peer) Session { return echoSession{p: p} }

type echoSession struct {
	NopSession
	p Peer
}

func (s echoSession) Message(op Op, data []byte) { s.p.Reply(op, data) }

// Peer is the server's side of one connection.
type Peer interface {
	// Reply writes a message from within Message. On a queued connection
	// (Options.Queue > 0) it goes through the queue like Enqueue.
	Reply(op Op, data []byte)
	// Enqueue hands a text message (or a Pair) to the connection's one
	// writer without waiting. It returns ErrQueueFull when Options.Queue
	// entries are waiting already, ErrClosing once the server or the client has begun
	// to close; either way nothing is sent.
	Enqueue(o *Outgoing) error
	// Close starts the server's close with code: whatever is queued is
	// dropped, the close frame goes out after the message being written,
	// and the client has a while to answer. Safe from any goroutine.
	Close(code int)
}

// Why Enqueue sent nothing.
var (
	ErrQueueFull = errors.New("send queue full")
	ErrClosing   = errors.New("connection closing")
)

// Settings are the flags the layer obeys (servers/internal/settings maps
// them).
type Settings struct {
	Name        string   // the variant, in the log of a recovered panic
	MaxMessage  int64    // -max-message: the largest message, after inflate; larger closes 1009
	Compression bool     // -compression: permessage-deflate
	Origins     []string // -origin: the Origin values allowed (empty = any)
	// Subprotocols (-subprotocols): the answer is the first the client
	// offered that this list has; SubprotocolRequired refuses a client
	// that offers none of them (-subprotocol-required).
	Subprotocols        []string
	SubprotocolRequired bool
	MaxConns            int           // -max-conns: 503 over it (0 = no cap)
	PingInterval        time.Duration // -ping-interval: quiet time before the server pings
	PingTimeout         time.Duration // -ping-timeout: time to answer before the connection is dropped
	Loops               int           // -loops: gnet's event loops (0 = one per CPU)
	HTTP                lifecycle.HTTPLimits
	// Faults are the known-bad modes in force at start (-fault-*); the
	// target's Faults switches them while it serves.
	Faults faults.Modes
}

// Options are what a target chooses beyond the settings.
type Options struct {
	Handler Handler
	// Queue is the send queue of each connection, in messages; 0 = no
	// queue, replies only.
	Queue int
	// Front, on gnet, serves every request instead of the upgrade checks
	// (gnetfront.go): an application protocol that decides on a request
	// before its upgrade (Engine.IO). Handler is then unused.
	Front http.Handler
	// NoKeepalive turns the WebSocket pings off: the application has a
	// heartbeat of its own (Engine.IO's). gnet only.
	NoKeepalive bool
	// Unserved, with Front, counts a request that ended before Front saw
	// it: its header timed out (-handshake-timeout), or it was abandoned
	// or malformed.
	Unserved func(timedOut bool)
	// AcceptError, with nil metrics, counts a connection the layer
	// refused after its accept (on gnet, when the descriptor it takes
	// over could not be duplicated: EMFILE near the open-files limit),
	// so that a target counting in its own hooks still counts every
	// connection it turned away.
	AcceptError func(reason string)
}

// A Build serves on one library. m may be nil (-metrics=false).
type Build func(cfg Settings, m *metrics.Metrics, log *slog.Logger, o Options) (lifecycle.Target, error)

// builds has each library's constructor, registered by its adapter file
// (gorilla.go, coder.go, gnet.go, nbio.go): the one place a library is
// added besides its row in servers/variants.
var builds = map[variants.Library]Build{}

// register makes build the constructor of lib.
func register(lib variants.Library, build Build) bool {
	if _, dup := builds[lib]; dup {
		panic("wsserver: " + string(lib) + " registered twice")
	}
	builds[lib] = build
	return true
}

// registerHTTP registers a library that upgrades on the net/http front
// (httpfront.go) with the upgrader up makes.
func registerHTTP(lib variants.Library, up func(Settings) upgrader) bool {
	return register(lib, func(cfg Settings, m *metrics.Metrics, log *slog.Logger, o Options) (lifecycle.Target, error) {
		return newHTTPTarget(cfg, m, log, o, up(cfg)), nil
	})
}

// New serves on lib, one of variants.WebSocketLibraries.
func New(lib variants.Library, cfg Settings, m *metrics.Metrics, log *slog.Logger, o Options) (lifecycle.Target, error) {
	build, ok := builds[lib]
	if !ok {
		return nil, fmt.Errorf("wsserver: no adapter for the WebSocket library %q", lib)
	}
	return build(cfg, m, log, o)
}

// For returns New bound to lib, for the targets that take a constructor.
func For(lib variants.Library) Build {
	return func(cfg Settings, m *metrics.Metrics, log *slog.Logger, o Options) (lifecycle.Target, error) {
		return New(lib, cfg, m, log, o)
	}
}

// NewGnet serves on gnet's event loops (-loops) with gobwas/ws framing;
// the Socket.IO engine on gnet builds on it with Options.Front.
func NewGnet(cfg Settings, m *metrics.Metrics, log *slog.Logger, o Options) (lifecycle.Target, error) {
	return newGnetTarget(cfg, m, log, o)
}

var _ = register(variants.Gnet, NewGnet)

// Outgoing is one message on its way to one or many connections: it is
// framed once for all the gnet connections it goes to.
type Outgoing struct {
	Data []byte // never changed once made

	frameOnce, deflateOnce sync.Once
	frame, deflated        []byte

	// closeCode, when not 0, makes this no message but the order to close
	// with that code once everything queued before it is written.
	closeCode int

	// then goes out right after Data as part of the same queue entry
	// (Pair).
	then *Outgoing
}

// Pair is one queue entry of two messages that go out one after the
// other: a broadcast's copy for its sender and the sender's result. The
// send queue counts it as one, so that a sender is charged one entry per
// broadcast, as every other member is, and a full queue points at a client
// that does not read rather than at the one that sends. second must be a
// single message.
func Pair(first, second *Outgoing) *Outgoing {
	return &Outgoing{Data: first.Data, then: second}
}

// Then is the message that goes out right after o in the same queue entry,
// nil unless o is a Pair.
func (o *Outgoing) Then() *Outgoing { return o.then }

// NewOutgoing wraps data, which must not change afterwards.
func NewOutgoing(data []byte) *Outgoing { return &Outgoing{Data: data} }

const (
	// transport is the transport label of the handshake metrics.
	transport = "websocket"

	// closeWait bounds how long a connection whose close the server started
	// waits for the client's answer before the TCP connection is dropped.
	closeWait = 2 * time.Second

	// maxAnswerBytes caps an answer the gnet front gathers from its
	// handler (a JSON error, a plain-text refusal).
	maxAnswerBytes = 16 << 10
)

// Disconnect reasons (knowngood_disconnects_total{reason}) are close codes:
// the client's when it closed, the server's when the server did, and 1006
// when the TCP connection ended without a close frame.
const (
	reasonPingTimeout = "ping_timeout" // no answer to a ping: half-open, dropped
	reasonAbnormal    = "1006"
	reasonProtocol    = "1002"
	reasonTooBig      = "1009"
)

// codeReason is the disconnect reason for a close code.
func codeReason(code int) string { return strconv.Itoa(code) }

// netFailure reports whether err is an I/O error rather than a protocol
// error found by a library.
func netFailure(err error) bool {
	var ne net.Error
	return conns.ClientLeft(err) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

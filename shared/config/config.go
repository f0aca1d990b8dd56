// Package config is the one place where knowngood's settings are defined,
// parsed and checked. Every flag has an environment twin (-admin-addr is
// KG_ADMIN_ADDR); a flag beats the environment, the environment beats the
// default.
//
// README.md beside this file lists every flag, its twin and its default.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Config holds every setting of a target, grouped by the part of the code
// that reads them. Fields a variant does not use are ignored by it. Flag
// and environment names stay flat (-fault-drop, KG_PUSH_SIZE): the groups
// are for the code, not for users.
type Config struct {
	Variant string
	List    bool
	Version bool // print the build's version and exit

	Addr      string
	AdminAddr string
	// AdminToken, when set, is the bearer token the admin listener's
	// run-time orders (/control/) need; without it they are served only
	// on a loopback AdminAddr.
	AdminToken      string
	LogFormat       string
	LogLevel        string
	Backlog         int
	MaxConns        int
	ShutdownTimeout time.Duration
	MaxMessage      int64
	Compression     bool
	Origins         []string
	// Subprotocols are the WebSocket subprotocols the WebSocket targets
	// answer with: the first the client offered that the list has.
	Subprotocols []string
	// SubprotocolRequired refuses a client that offers none of them.
	SubprotocolRequired bool
	HandshakeTimeout    time.Duration
	MaxHeaderBytes      int64
	IdleTimeout         time.Duration
	BodyTimeout         time.Duration
	Metrics             bool
	Pprof               bool
	// PingInterval and PingTimeout keep every connection alive and bounded:
	// Engine.IO's pings, the WebSocket targets' and echo-tcp's quiet time.
	PingInterval time.Duration
	PingTimeout  time.Duration

	TLS       TLS
	Faults    Faults
	SocketIO  SocketIO
	Broadcast Broadcast
	Cluster   Cluster
	Gnet      Gnet
	Dashboard Dashboard

	// Given names the flags set explicitly, on the command line or through
	// their environment twin, without the dash and in flag order: what
	// start-up checks against the flags the variant reads.
	Given []string
}

// TLS is -tls-cert and -tls-key: both or neither.
type TLS struct {
	Cert string
	Key  string
	// ClientCA is a PEM file of the authorities a client certificate must
	// be signed by (-tls-client-ca); empty asks for none.
	ClientCA string
}

// Faults are the known-bad modes (-fault-*), all off by default: the
// settings of package faults, which applies them.
type Faults = faults.Modes

// SocketIO holds what only the Socket.IO targets read.
type SocketIO struct {
	Delay time.Duration
	// BlockingModel is when the blocking variant's answers leave its one
	// loop: BlockingAsyncio or BlockingNode.
	BlockingModel  string
	Transports     []string
	MaxPayload     int64
	ConnectTimeout time.Duration
	EmitAuth       bool
	// Path is where the targets serve Socket.IO (Node's path option, with
	// its trailing slash): "/socket.io/" unless -path.
	Path string
	// Namespaces restricts the namespaces a client may join to "/" and
	// these; nil lets it join any (made on its first CONNECT, up to
	// MaxNamespaces).
	Namespaces []string
	// PushEvent is the event of the timed push (-push-interval);
	// PushRooms, when not 0, sends it to that many rooms (push-1...)
	// instead of every socket.
	PushEvent string
	PushRooms int
	// AckDelay holds the ack of an event the targets do not otherwise
	// serve (any name but theirs) for this long.
	AckDelay time.Duration
	// Recovery is Socket.IO's connection state recovery window: a socket
	// whose session ended in a way a client may come back from (its
	// transport closed or failed, a ping timed out, the server dropped it)
	// is kept this long, and a client that reconnects within it with the
	// socket's pid and last offset gets its id, its rooms and the
	// broadcasts it missed back (0 = off, as Node's default).
	Recovery time.Duration
	// AllowEIO3 accepts Engine.IO v3 / Socket.IO v2 clients beside v4 ones.
	AllowEIO3 bool
	// AdminUI serves the /admin namespace of the official Socket.IO Admin
	// UI (as Node's instrument(io, {auth: false}) does), answers the
	// admin listener's origin cross-origin, and serves the UI's page on
	// the admin listener at /admin-ui/.
	AdminUI bool
	// Engine is the Engine.IO / Socket.IO server the targets run on:
	// EngineZishang520 (the library users deploy), EngineNative (this
	// project's own, servers/sioengine, on net/http) or EngineNativeGnet
	// (the same engine on gnet's event loops; WebSocket sessions only).
	Engine string
}

// Native reports whether the targets run on this project's own engine,
// on either library.
func (s SocketIO) Native() bool { return s.Engine == EngineNative || s.Engine == EngineNativeGnet }

// MountPath is Path with its trailing slash: every request under it is
// Socket.IO's, as under Node's path option.
func (s SocketIO) MountPath() string {
	if strings.HasSuffix(s.Path, "/") {
		return s.Path
	}
	return s.Path + "/"
}

// When the blocking variant's answers leave its loop (-blocking-model).
const (
	// BlockingAsyncio: only when the loop has no ready work left, as
	// python-socketio's queued writers on uvicorn's asyncio loop.
	BlockingAsyncio = protocol.BlockingAsyncio
	// BlockingNode: in the handler's own turn, as Node's socket.io.
	BlockingNode = protocol.BlockingNode
)

// The Socket.IO engines (-engine).
const (
	EngineZishang520 = "zishang520"
	EngineNative     = "native"
	EngineNativeGnet = "native-gnet"
)

// Engines lists the values of -engine.
var Engines = []string{EngineZishang520, EngineNative, EngineNativeGnet}

// errNativeLibRemoved answers -native-lib, which -engine replaced: two
// flags for three states had to be checked against each other everywhere.
var errNativeLibRemoved = errors.New("removed: -engine says it now; -native-lib gnet is -engine native-gnet, -native-lib nethttp is -engine native")

// Broadcast holds what only the broadcast targets read.
type Broadcast struct {
	PushInterval time.Duration
	PushSize     int
	SendQueue    int
	Slow         string
}

// Cluster is what joins replicas of a broadcast or Socket.IO target into
// one cluster.
type Cluster struct {
	// Redis is the URL of the Redis server that carries broadcasts between
	// replicas (redis://HOST:PORT/DB, rediss:// for TLS, unix:///PATH);
	// empty runs one process on its own.
	Redis string
}

// Dashboard is what the admin listener's live dashboard shows besides
// this process.
type Dashboard struct {
	// Replicas are the admin URLs (http://HOST:PORT) of the replicas the
	// page shows side by side with their sum; empty shows this process.
	Replicas []string
}

// MaxDashboardReplicas bounds -dashboard-replicas: each page refresh asks
// every replica, so the list is a cost each open page multiplies.
const MaxDashboardReplicas = 32

// -max-header-bytes: its default, as nginx's and Node's own header limits
// are of that order (Node: 16 KiB), and its range. net/http's default,
// 1 MiB, is the top: 200 clients each sending that much unfinished header
// hold about 500 MiB of a target until -handshake-timeout.
const (
	DefaultMaxHeaderBytes = 16 << 10
	MinMaxHeaderBytes     = 1 << 10
	MaxMaxHeaderBytes     = 1 << 20
)

// Gnet holds what only the gnet targets read.
type Gnet struct {
	Loops int
}

// Default returns the settings a target runs with when nothing is given.
func Default() Config {
	return Config{
		Variant:          "empty",
		Addr:             ":8080",
		AdminAddr:        ":9100",
		LogFormat:        "text",
		LogLevel:         "info",
		Backlog:          0,
		MaxConns:         0,
		ShutdownTimeout:  5 * time.Second,
		MaxMessage:       1 << 20,
		Origins:          nil,
		HandshakeTimeout: 10 * time.Second,
		MaxHeaderBytes:   DefaultMaxHeaderBytes,
		// Node's http server: keepAliveTimeout 5 s; requestTimeout 300 s
		// for the header and the body together.
		IdleTimeout: 5 * time.Second,
		BodyTimeout: 300 * time.Second,
		Metrics:     true,

		PingInterval: 25 * time.Second,
		PingTimeout:  20 * time.Second,

		SocketIO: SocketIO{
			Delay:          50 * time.Millisecond,
			BlockingModel:  BlockingAsyncio,
			Transports:     []string{"polling", "websocket"},
			MaxPayload:     1_000_000,
			ConnectTimeout: 45 * time.Second,
			Engine:         EngineZishang520,
			Path:           "/socket.io/",
			PushEvent:      "tick",
		},
		Broadcast: Broadcast{
			SendQueue: 256,
			PushSize:  100,
			Slow:      "drop",
		},
	}
}

// EnvName is the environment twin of a flag: -admin-addr is KG_ADMIN_ADDR.
func EnvName(flagName string) string {
	return "KG_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// UsageError is a bad flag or environment value. Its message is one line
// that names the flag and the accepted form; the process exits with 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ErrHelp is returned by Parse for -h and -help.
var ErrHelp = flag.ErrHelp

// Parse reads args (without the program name) and the environment through
// getenv, and validates the result. usage, if not nil, receives the flag
// list for -h.
func Parse(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := Default()
	fs := newFlagSet(&c)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if usage != nil {
				fs.SetOutput(usage)
				fs.PrintDefaults()
			}
			return c, ErrHelp
		}
		// One line, even for a flag name with a newline in it (the fuzzer's).
		return c, &UsageError{Msg: strings.ReplaceAll(err.Error(), "\n", `\n`)}
	}
	if fs.NArg() > 0 {
		return c, &UsageError{Msg: fmt.Sprintf("unexpected argument %q: every setting is a flag such as -variant NAME", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		// -version has no environment twin: KG_VERSION is too likely to
		// be set for something else (an image tag) to stop the target.
		if set[f.Name] || envErr != nil || f.Name == "version" {
			return
		}
		name := EnvName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			envErr = &UsageError{Msg: fmt.Sprintf("invalid value %q for %s (flag -%s): %v", v, name, f.Name, err)}
		}
	})
	if envErr != nil {
		return c, envErr
	}
	fs.Visit(func(f *flag.Flag) { c.Given = append(c.Given, f.Name) })
	return c, c.Validate()
}

// Usage writes the flag list with defaults and environment twins.
func Usage(w io.Writer) {
	c := Default()
	fs := newFlagSet(&c)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func newFlagSet(c *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("knowngood", flag.ContinueOnError)
	str := func(p *string, name, help string) { fs.StringVar(p, name, *p, help+envHint(name)) }
	dur := func(p *time.Duration, name, help string) { fs.Var((*durationValue)(p), name, help+envHint(name)) }
	num := func(p *int, name, help string) { fs.Var((*intValue)(p), name, help+envHint(name)) }
	size := func(p *int64, name, help string) { fs.Var((*sizeValue)(p), name, help+envHint(name)) }
	boolean := func(p *bool, name, help string) { fs.BoolVar(p, name, *p, help+envHint(name)) }
	frac := func(p *float64, name, help string) { fs.Var((*fractionValue)(p), name, help+envHint(name)) }
	list := func(p *[]string, name, help string) { fs.Var((*listValue)(p), name, help+envHint(name)) }

	str(&c.Variant, "variant", "target to run (see -list)")
	fs.BoolVar(&c.List, "list", false, "print every variant with a one-line description and exit")
	fs.BoolVar(&c.Version, "version", false, "print the module version, commit and Go version and exit")
	str(&c.Addr, "addr", "listen address of the target")
	str(&c.AdminAddr, "admin-addr", "listen address of /metrics, /health, /stats (and /debug/pprof with -pprof); empty turns it off")
	str(&c.AdminToken, "admin-token", "token the admin listener's run-time orders (POST /control/...) need, sent as Authorization: Bearer TOKEN; without it they are served only when -admin-addr is a loopback address")
	str(&c.LogFormat, "log-format", "log format: text or json")
	str(&c.LogLevel, "log-level", "log level: debug, info, warn or error")
	num(&c.Backlog, "backlog", "listen backlog; 0 = the kernel's net.core.somaxconn, which also caps any larger value")
	num(&c.MaxConns, "max-conns", "connections held at once; over it, HTTP 503 before any upgrade (0 = no cap)")
	dur(&c.ShutdownTimeout, "shutdown-timeout", "on SIGINT, SIGTERM or SIGHUP (each a graceful shutdown), time to tell every client and exit")
	size(&c.MaxMessage, "max-message", "largest WebSocket message in bytes (echo and broadcast)")
	boolean(&c.Compression, "compression", "permessage-deflate")
	list(&c.Origins, "origin", "allowed Origin values, comma-separated (empty = any)")
	list(&c.Subprotocols, "subprotocols", "WebSocket targets: subprotocols served, comma-separated (graphql-transport-ws,mqtt): the answer is the first the client offered that this list has (empty = none answered)")
	boolean(&c.SubprotocolRequired, "subprotocol-required", "WebSocket targets: refuse (HTTP 401, as Node's ws refuses in verifyClient) a client that offers none of -subprotocols")
	str(&c.TLS.Cert, "tls-cert", "TLS certificate file (with -tls-key)")
	str(&c.TLS.Key, "tls-key", "TLS key file (with -tls-cert)")
	str(&c.TLS.ClientCA, "tls-client-ca", "mutual TLS: PEM file of the authorities a client certificate must be signed by; a client without one is refused in the TLS handshake (with -tls-cert)")
	dur(&c.HandshakeTimeout, "handshake-timeout", "time a client has to send an HTTP request's header (its upgrade/open request), on the target and admin listeners")
	size(&c.MaxHeaderBytes, "max-header-bytes", "largest HTTP request header in bytes, on the target and admin listeners (net/http's rule: 4096 bytes more are read before the 431)")
	dur(&c.IdleTimeout, "idle-timeout", "HTTP keep-alive: time a connection may wait for its next request before it is closed (target and admin listeners)")
	dur(&c.BodyTimeout, "body-timeout", "time a client has to send an HTTP request's body once its header is in (target and admin listeners)")
	boolean(&c.Metrics, "metrics", "instrument the target (false measures the cost of instrumentation)")
	boolean(&c.Pprof, "pprof", "serve /debug/pprof on the admin listener")
	frac(&c.Faults.Reject, "fault-reject", "known-bad: fraction of handshakes answered with 503 (0 to 1)")
	dur(&c.Faults.Delay, "fault-delay", "known-bad: delay added to every echo and ack")
	num(&c.Faults.CloseAfter, "fault-close-after", "known-bad: close a connection after that many messages (0 = off)")
	frac(&c.Faults.Drop, "fault-drop", "known-bad: fraction of messages silently dropped (0 to 1)")
	dur(&c.Faults.LeakTimers, "fault-leak-timers", "known-bad (Socket.IO): every connection starts an interval timer of this period, holding its socket and 64 KiB, that is never stopped when it disconnects, as a setInterval not cleared (0 = off)")

	boolean(&c.Faults.DropChunkedPost, "fault-drop-chunked-post", "known-bad (Socket.IO): answer a polling POST sent without Content-Length (Transfer-Encoding: chunked, as the zishang520 Go client sends) as python-engineio 4 does: 200 OK, its packets dropped")

	dur(&c.SocketIO.Delay, "delay", "Socket.IO: time the connect middleware takes (async, blocking)")
	str(&c.SocketIO.BlockingModel, "blocking-model", "Socket.IO blocking: when an answer leaves the frozen loop: asyncio (once the loop has no work left, as python-socketio on uvicorn) or node (in the handler's own turn, as Node's socket.io)")
	list(&c.SocketIO.Transports, "transports", "Socket.IO: allowed transports, comma-separated: polling, websocket")
	dur(&c.PingInterval, "ping-interval", "Socket.IO: Engine.IO ping interval; WebSocket targets: quiet time before the server pings; echo-tcp: a connection quiet for -ping-interval plus -ping-timeout is closed")
	dur(&c.PingTimeout, "ping-timeout", "Socket.IO: Engine.IO ping timeout; WebSocket targets: time to answer a ping before the connection is dropped (ping_timeout)")
	size(&c.SocketIO.MaxPayload, "max-payload", "Socket.IO: largest Engine.IO payload in bytes")
	dur(&c.SocketIO.ConnectTimeout, "connect-timeout", "Socket.IO: time a client has to join a namespace after the Engine.IO open")
	str(&c.SocketIO.Path, "path", "Socket.IO: the path it is served at, as a client's path option names it (/socket/socket.io/); a trailing slash is implied")
	dur(&c.SocketIO.Recovery, "recovery", "Socket.IO: connection state recovery window, Node's connectionStateRecovery.maxDisconnectionDuration: a client that reconnects within it gets its id, rooms and missed packets back, and socket.recovered (0 = off)")
	dur(&c.SocketIO.AckDelay, "ack-delay", "Socket.IO: an event of any other name than the targets' own is acknowledged with its arguments, after this long (0 = at once)")
	boolean(&c.SocketIO.EmitAuth, "emit-auth", "Socket.IO: on connect, emit \"auth\" with the handshake's auth object")
	boolean(&c.SocketIO.AllowEIO3, "allow-eio3", "Socket.IO: also accept Engine.IO v3 / Socket.IO v2 clients (socket.io-client 2, older load tools); without it they get HTTP 400")
	boolean(&c.SocketIO.AdminUI, "admin-ui", "Socket.IO: serve the official Socket.IO Admin UI's /admin namespace (as Node's instrument(io, {auth: false})), without authentication, and its page at /admin-ui/ on the admin listener, whose origin the target then answers cross-origin")
	str(&c.SocketIO.Engine, "engine", "Socket.IO: the server underneath: zishang520 (the library), native (this project's own, on net/http) or native-gnet (this project's own on gnet's event loops; WebSocket only, polling gets HTTP 400)")
	fs.Func("native-lib", "removed: use -engine native-gnet (was -native-lib gnet) or -engine native (was nethttp)", func(string) error { return errNativeLibRemoved })

	dur(&c.Broadcast.PushInterval, "push-interval", "broadcast and Socket.IO: timed push to every client (Socket.IO: or to each room of -push-rooms), numbered and stamped with its send time (0 = off)")
	num(&c.Broadcast.PushSize, "push-size", "broadcast and Socket.IO: push payload in bytes")
	list(&c.SocketIO.Namespaces, "namespaces", "Socket.IO: the namespaces a client may join besides /, comma-separated (/chat,/cobrowse); others get CONNECT_ERROR \"Invalid namespace\" (empty = any, up to 1000 made by clients)")
	str(&c.SocketIO.PushEvent, "push-event", "Socket.IO: the event of the timed push (-push-interval)")
	num(&c.SocketIO.PushRooms, "push-rooms", "Socket.IO: push to the rooms push-1 ... push-N, which sockets join with the join event, instead of to every socket (0 = every socket)")
	num(&c.Broadcast.SendQueue, "send-queue", "broadcast: per-connection send queue, in messages")
	str(&c.Broadcast.Slow, "slow", "broadcast: policy for a client whose queue is full: drop or close")
	str(&c.Cluster.Redis, "redis", "cluster (broadcast and Socket.IO): Redis URL that carries broadcasts between replicas, redis://HOST:PORT/DB (empty = one process); Socket.IO: several URLs separated by commas spread the rooms over them by hash")
	num(&c.Gnet.Loops, "loops", "gnet: event loops (0 = one per CPU)")
	list(&c.Dashboard.Replicas, "dashboard-replicas", "admin URLs of the replicas the dashboard (/ on the admin listener) shows with their sum, comma-separated: http://HOST:PORT,... (empty = this process)")
	return fs
}

// faultName is the name of the first known-bad mode of m out of range, or
// "".
func faultName(m Faults) string {
	name, _ := m.Check()
	return name
}

func envHint(name string) string { return " (env " + EnvName(name) + ")" }

// Validate checks the values that parse but make no sense.
func (c Config) Validate() error {
	bad := func(flagName, format string, args ...any) error {
		return &UsageError{Msg: fmt.Sprintf("invalid value for -%s: %s", flagName, fmt.Sprintf(format, args...))}
	}
	switch {
	case c.Addr == "":
		return bad("addr", "empty; want host:port such as :8080 or 127.0.0.1:0")
	case checkAddr(c.Addr) != "":
		return bad("addr", "%q: %s; want host:port such as :8080 or 127.0.0.1:0", c.Addr, checkAddr(c.Addr))
	case c.AdminAddr != "" && checkAddr(c.AdminAddr) != "":
		return bad("admin-addr", "%q: %s; want host:port such as :9100 or 127.0.0.1:0, or empty for none", c.AdminAddr, checkAddr(c.AdminAddr))
	case strings.ContainsFunc(c.AdminToken, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return bad("admin-token", "holds a space or a control character; want a token an Authorization header can carry")
	case c.LogFormat != "text" && c.LogFormat != "json":
		return bad("log-format", "%q; want text or json", c.LogFormat)
	case !validLevel(c.LogLevel):
		return bad("log-level", "%q; want debug, info, warn or error", c.LogLevel)
	case c.Backlog < 0:
		return bad("backlog", "%d; want 0 (kernel default) or more", c.Backlog)
	case c.MaxConns < 0:
		return bad("max-conns", "%d; want 0 (no cap) or more", c.MaxConns)
	case c.ShutdownTimeout <= 0:
		return bad("shutdown-timeout", "%s; want a positive duration such as 5s", c.ShutdownTimeout)
	case c.MaxMessage <= 0:
		return bad("max-message", "%d; want a positive number of bytes", c.MaxMessage)
	case (c.TLS.Cert == "") != (c.TLS.Key == ""):
		return bad("tls-cert", "-tls-cert and -tls-key go together; give both or neither")
	case badToken(c.Subprotocols) != "":
		return bad("subprotocols", "%q is not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~); want names such as graphql-transport-ws,mqtt", badToken(c.Subprotocols))
	case c.SubprotocolRequired && len(c.Subprotocols) == 0:
		return bad("subprotocol-required", "without -subprotocols every client would be refused; give the subprotocols served")
	case c.TLS.ClientCA != "" && c.TLS.Cert == "":
		return bad("tls-client-ca", "needs -tls-cert and -tls-key: client certificates are asked for in TLS")
	case c.HandshakeTimeout <= 0:
		return bad("handshake-timeout", "%s; want a positive duration such as 10s", c.HandshakeTimeout)
	case c.MaxHeaderBytes < MinMaxHeaderBytes || c.MaxHeaderBytes > MaxMaxHeaderBytes:
		return bad("max-header-bytes", "%d; want %d (1KiB) to %d (1MiB) bytes", c.MaxHeaderBytes, MinMaxHeaderBytes, MaxMaxHeaderBytes)
	case c.IdleTimeout <= 0:
		return bad("idle-timeout", "%s; want a positive duration such as 5s", c.IdleTimeout)
	case c.BodyTimeout <= 0:
		return bad("body-timeout", "%s; want a positive duration such as 300s", c.BodyTimeout)
	case faultName(c.Faults) != "":
		// The admin listener's POST /control/fault holds a change to the
		// same rule.
		name, why := c.Faults.Check()
		return bad("fault-"+name, "%s", why)
	case c.SocketIO.Delay < 0:
		return bad("delay", "%s; want 0 or a positive duration such as 50ms", c.SocketIO.Delay)
	case !strings.HasPrefix(c.SocketIO.Path, "/") || c.SocketIO.Path == "/" || strings.ContainsAny(c.SocketIO.Path, "?# \t") || strings.Contains(c.SocketIO.Path, "//"):
		return bad("path", "%q; want a path of one segment or more, starting with /, such as /socket.io/ or /socket/socket.io/", c.SocketIO.Path)
	case badNamespace(c.SocketIO.Namespaces) != "":
		return bad("namespaces", "%q; want names starting with /, such as /chat,/cobrowse", badNamespace(c.SocketIO.Namespaces))
	case c.SocketIO.PushEvent == "" || reservedEvent(c.SocketIO.PushEvent):
		return bad("push-event", "%q; want an event name a client may listen to (not connect, connect_error, disconnect, ...), such as tick", c.SocketIO.PushEvent)
	case c.SocketIO.PushRooms < 0 || c.SocketIO.PushRooms > MaxPushRooms:
		return bad("push-rooms", "%d; want 0 (every socket) to %d rooms", c.SocketIO.PushRooms, MaxPushRooms)
	case c.SocketIO.Recovery < 0 || c.SocketIO.Recovery > MaxRecovery:
		return bad("recovery", "%s; want 0 (off) or a window up to %s such as 2m (Node's default)", c.SocketIO.Recovery, MaxRecovery)
	case c.SocketIO.Recovery > 0 && c.Cluster.Redis != "":
		return bad("recovery", "%s with -redis: Node's @socket.io/redis-adapter, whose protocol -redis speaks, keeps no session, so no client would ever recover; run one replica, or drop -recovery", c.SocketIO.Recovery)
	case c.SocketIO.AckDelay < 0:
		return bad("ack-delay", "%s; want 0 or a positive duration such as 100ms", c.SocketIO.AckDelay)
	case c.SocketIO.BlockingModel != BlockingAsyncio && c.SocketIO.BlockingModel != BlockingNode:
		return bad("blocking-model", "%q; want asyncio or node", c.SocketIO.BlockingModel)
	case len(c.SocketIO.Transports) == 0:
		return bad("transports", "empty; want polling, websocket or polling,websocket")
	case c.PingInterval <= 0:
		return bad("ping-interval", "%s; want a positive duration such as 25s", c.PingInterval)
	case c.PingTimeout <= 0:
		return bad("ping-timeout", "%s; want a positive duration such as 20s", c.PingTimeout)
	case c.SocketIO.MaxPayload <= 0:
		return bad("max-payload", "%d; want a positive number of bytes", c.SocketIO.MaxPayload)
	case c.SocketIO.ConnectTimeout <= 0:
		return bad("connect-timeout", "%s; want a positive duration such as 45s", c.SocketIO.ConnectTimeout)
	case !slices.Contains(Engines, c.SocketIO.Engine):
		return bad("engine", "%q; want zishang520, native or native-gnet", c.SocketIO.Engine)
	case c.Broadcast.PushInterval < 0:
		return bad("push-interval", "%s; want 0 (off) or a positive duration", c.Broadcast.PushInterval)
	case c.Broadcast.PushSize < 0:
		return bad("push-size", "%d; want 0 or more bytes", c.Broadcast.PushSize)
	case c.Broadcast.SendQueue <= 0:
		return bad("send-queue", "%d; want 1 or more messages", c.Broadcast.SendQueue)
	case c.Broadcast.Slow != "drop" && c.Broadcast.Slow != "close":
		return bad("slow", "%q; want drop or close", c.Broadcast.Slow)
	case c.Cluster.Redis != "" && !validRedisURLs(c.Cluster.Redis):
		return bad("redis", "%q; want redis://HOST:PORT/DB, rediss://HOST:PORT/DB or unix:///PATH (Socket.IO: several, separated by commas)", c.Cluster.Redis)
	case c.Gnet.Loops < 0:
		return bad("loops", "%d; want 0 (one per CPU) or more", c.Gnet.Loops)
	case len(c.Dashboard.Replicas) > MaxDashboardReplicas:
		return bad("dashboard-replicas", "%d URLs; want at most %d", len(c.Dashboard.Replicas), MaxDashboardReplicas)
	}
	for _, u := range c.Dashboard.Replicas {
		if !validAdminURL(u) {
			return bad("dashboard-replicas", "%q; want http://HOST:PORT or https://HOST:PORT, comma-separated", u)
		}
	}
	for _, t := range c.SocketIO.Transports {
		if t != "polling" && t != "websocket" {
			return bad("transports", "%q; want polling, websocket or polling,websocket", t)
		}
	}
	return nil
}

// checkAddr is what is wrong with a listen address, or "" when it is a
// host:port that net.Listen can take: a port number from 0 to 65535 (0
// picks a free one) and a host that is empty, an IP address or a name.
// A port out of range would otherwise only fail at listen time, after the
// start-up lines, with a message that does not name the flag.
func checkAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return ae.Err
		}
		return err.Error()
	}
	n, err := strconv.ParseUint(port, 10, 64)
	switch {
	case port == "":
		return "no port"
	case err != nil && !isDigits(port):
		return fmt.Sprintf("port %q is not a number", port)
	case err != nil || n > 65535:
		return fmt.Sprintf("port %s out of range 0-65535", port)
	case host != "" && !validIP(host) && strings.Trim(host, "0123456789.") == "":
		return fmt.Sprintf("host %q is not an IP address", host)
	case host != "" && !validIP(host) && !validHostname(host):
		return fmt.Sprintf("host %q is not an IP address or a host name", host)
	}
	return ""
}

// validHostname: letters, digits, '-', '_' and '.' (RFC 1123 and what
// resolvers accept in practice), at most 253 bytes.
func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// validRedisURLs accepts one URL, or several separated by commas.
func validRedisURLs(s string) bool {
	for _, u := range strings.Split(s, ",") {
		if !validRedisURL(u) {
			return false
		}
	}
	return true
}

// validRedisURL accepts what go-redis's ParseURL accepts, by scheme and
// host, without config depending on the Redis client.
func validRedisURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "redis", "rediss":
		return u.Host != "" && (u.Path == "" || u.Path == "/" || isDigits(strings.TrimPrefix(u.Path, "/")))
	case "unix":
		return u.Path != ""
	}
	return false
}

// validAdminURL: an http or https URL of a host, with nothing after it but
// a slash: the dashboard adds /stats itself.
func validAdminURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.User == nil && checkAddr(hostPort(u)) == ""
}

// hostPort is u's host:port, with the scheme's port when it has none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func validLevel(s string) bool {
	return slices.Contains([]string{"debug", "info", "warn", "error"}, s)
}

// SlogLevel is LogLevel as a slog.Level; Validate has checked it.
func (c Config) SlogLevel() slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(c.LogLevel))
	return l
}

// Effective returns every setting by flag name, as a flag would spell it
// (durations as 50ms, not nanoseconds): what /health shows and the start
// log line records.
func (c Config) Effective() map[string]string {
	out := map[string]string{}
	fs := newFlagSet(&c)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "list" && f.Name != "version" && f.Name != "native-lib" {
			out[f.Name] = f.Value.String()
		}
	})
	if c.AdminToken != "" {
		out["admin-token"] = "(set)" // /health shows this map: never the token
	}
	return out
}

// MaxNamespaces bounds the namespaces clients may make when any may be
// joined: each is held until the target ends.
const MaxNamespaces = 1000

// MaxPushRooms bounds -push-rooms: each tick is one broadcast per room.
const MaxPushRooms = 10000

// MaxRecovery bounds -recovery: what a target keeps for the sockets that
// may come back is held at most this long.
const MaxRecovery = time.Hour

// badNamespace is the first of names that is not a namespace, or "".
func badNamespace(names []string) string {
	for _, n := range names {
		if !strings.HasPrefix(n, "/") || strings.ContainsAny(n, ",? \t") {
			return n
		}
	}
	return ""
}

// reservedEvent reports whether name is one the Socket.IO client keeps
// for itself: an event of that name cannot be emitted to it.
func reservedEvent(name string) bool {
	switch name {
	case "connect", "connect_error", "disconnect", "disconnecting", "newListener", "removeListener":
		return true
	}
	return false
}

// badToken is the first of names that is not an HTTP token (RFC 9110
// 5.6.2), as a subprotocol must be, or "".
func badToken(names []string) string {
	for _, n := range names {
		if n == "" || strings.IndexFunc(n, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			return n
		}
	}
	return ""
}

// isTokenChar reports whether r is a tchar of RFC 9110 5.6.2.
func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// validIP: an IPv4 or IPv6 address, with a zone (fe80::1%eth0) or not.
func validIP(h string) bool {
	_, err := netip.ParseAddr(h)
	return err == nil
}

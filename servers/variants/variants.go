// Package variants is the catalog of knowngood's targets: for each variant
// its name, the line -list prints, its family, the library it is built on,
// what a client speaks to it, the flags it reads, and (Socket.IO) its
// connect model. It is metadata only
// and imports nothing of the servers, so that tests, benchmarks, soak and
// the docker tests can select targets by property at no cost; the
// constructors are in servers/targets.
//
// Adding a variant is one row in catalog plus its constructor in
// servers/targets; every test that selects by family, library or protocol
// picks it up.
package variants

import (
	"slices"

	"github.com/knowngood/knowngood/shared/protocol"
)

// Family is what a variant does for its clients.
type Family string

const (
	SocketIO  Family = "socketio"  // Socket.IO connect models and events
	Echo      Family = "echo"      // every message (or byte) back as it came
	Broadcast Family = "broadcast" // websocket-shootout echo/broadcast and the timed push
)

// Library is what a variant is built on.
type Library string

const (
	Gorilla    Library = "gorilla"    // github.com/gorilla/websocket on net/http
	Coder      Library = "coder"      // github.com/coder/websocket on net/http
	Gnet       Library = "gnet"       // gnet v2 event loops with gobwas/ws framing
	Nbio       Library = "nbio"       // github.com/lesismal/nbio's WebSocket framing on net/http
	Zishang520 Library = "zishang520" // github.com/zishang520/socket.io on net/http
	None       Library = "none"       // the standard library's net only
)

// NetHTTP reports whether the library serves through net/http, so that a
// listener wrapper sees every write; gnet writes from its own loops.
func (l Library) NetHTTP() bool {
	if l == Zishang520 {
		return true
	}
	w, ok := LookupWebSocketLibrary(l)
	return ok && w.NetHTTP
}

// WebSocketLibrary is one row of the registry of WebSocket libraries: the
// echo-LIB and broadcast-LIB variants, their constructors
// (servers/internal/wsserver, where the library's adapter file registers
// itself), the tests' library tables and the benchmarks' rows and goals
// all come from it. The docker files, the Prometheus scrape lists and the
// Makefile's port table stay static and are checked against the catalog
// by docker/catalog_test.go.
type WebSocketLibrary struct {
	Library Library
	// Package is what -list names it by.
	Package string
	// NetHTTP: it upgrades on net/http and writes through the listener's
	// connections; otherwise it writes from event loops of its own.
	NetHTTP bool
	// Loops: it reads -loops.
	Loops bool
	// WriteBlocksRead: a write under way holds up the connection's reader
	// (nbio writes under the lock its parser takes), so a client that
	// does not read has what it sends read only once the write ends or
	// fails (-ping-timeout, a slow client's close).
	WriteBlocksRead bool
	// Floor: scripts/bench/floors/LIBecho is a minimal echo server on the
	// library alone, which the benchmarks measure its targets against.
	Floor bool
	Goals Goals
}

// Goals are what the benchmarks and the allocation test hold a library's
// targets to; scripts/bench/README.md says how each is measured.
type Goals struct {
	IdleKiB     float64 // bench-conns: most KiB of server memory per idle connection
	EchoOfTCP   float64 // bench-echo: least fraction of echo-tcp's message rate
	PushP99ms   float64 // bench-broadcast: most push fan-out p99 at 10,000 subscribers, ms
	DeliveryCPU float64 // bench-broadcast: most server CPU per delivery, x the floor's
	EchoAllocs  float64 // TestAllocations: most allocations per echoed message
	// Against the library's floor (Floor), 0 = reported, no goal:
	IdleOfFloor float64 // bench-conns: most KiB per idle connection, x the floor's
	CPUOfFloor  float64 // bench-echo: most server CPU per echoed message, x the floor's
}

// webSocketLibraries is the registry, in the order -list prints their
// variants.
var webSocketLibraries = []WebSocketLibrary{
	{Gorilla, "gorilla/websocket", true, false, false, true, Goals{IdleKiB: 18, EchoOfTCP: 0.6, PushP99ms: 100, DeliveryCPU: 2, EchoAllocs: 1}},
	{Coder, "coder/websocket", true, false, false, true, Goals{IdleKiB: 24, EchoOfTCP: 0.6, PushP99ms: 100, DeliveryCPU: 2, EchoAllocs: 0}},
	{Gnet, "gnet event loops with gobwas/ws framing", false, true, false, true, Goals{IdleKiB: 1, EchoOfTCP: 0.9, PushP99ms: 50, DeliveryCPU: 1.5, EchoAllocs: 0, IdleOfFloor: 1.2, CPUOfFloor: 1.2}},
	// The floor is nbio on its own poller, the targets nbio's framing on
	// net/http: the ratios are reported, not judged.
	{Nbio, "nbio's WebSocket framing on net/http", true, false, true, true, Goals{IdleKiB: 14, EchoOfTCP: 0.55, PushP99ms: 100, DeliveryCPU: 2, EchoAllocs: 4}},
}

// WebSocketLibraries returns the registry; the slice is the caller's.
func WebSocketLibraries() []WebSocketLibrary { return slices.Clone(webSocketLibraries) }

// LookupWebSocketLibrary returns l's row of the registry.
func LookupWebSocketLibrary(l Library) (WebSocketLibrary, bool) {
	i := slices.IndexFunc(webSocketLibraries, func(w WebSocketLibrary) bool { return w.Library == l })
	if i < 0 {
		return WebSocketLibrary{}, false
	}
	return webSocketLibraries[i], true
}

// Protocol is what a client speaks to a variant.
type Protocol string

const (
	SocketIOProtocol Protocol = "socket.io" // Engine.IO over polling or WebSocket
	WebSocket        Protocol = "websocket" // RFC 6455 frames
	TCP              Protocol = "tcp"       // raw bytes, no framing
)

// Connect is how a Socket.IO variant answers a connect: the models a
// client's connect deadline is measured against.
type Connect string

const (
	AtOnce     Connect = "at-once"     // the connect handler does nothing: the baseline
	OwnTimer   Connect = "own-timer"   // each connect waits -delay on its own timer
	SharedLoop Connect = "shared-loop" // each connect holds the one shared loop for -delay, in turn
	NoConnect  Connect = ""            // not a Socket.IO variant
)

// Variant is one row of the catalog.
type Variant struct {
	Name     string
	About    string // the one line -list prints
	Family   Family
	Library  Library
	Protocol Protocol
	// Flags are the flags it reads beyond Common, by name without the dash.
	Flags []string
	// Connect is its connect model; NoConnect outside the Socket.IO family.
	Connect Connect
}

// Health is what the target says of itself on /health, so that a load
// client can read its counts without a list of variant names.
func (v Variant) Health() protocol.About {
	return protocol.About{Protocol: string(v.Protocol), Family: string(v.Family), Connect: string(v.Connect)}
}

// Reads reports whether v reads the flag name (without the dash).
func (v Variant) Reads(name string) bool {
	return slices.Contains(Common, name) || slices.Contains(v.Flags, name)
}

// Common are the flags every variant reads: the process, the listeners
// (the admin listener is an HTTP server for every variant), the connection
// cap, the known-bad modes, the keep-alive of a quiet connection, and the
// replicas the admin listener's dashboard shows.
var Common = []string{
	"variant", "list", "version", "addr", "admin-addr", "admin-token", "log-format", "log-level",
	"backlog", "max-conns", "shutdown-timeout", "tls-cert", "tls-key", "tls-client-ca",
	"handshake-timeout", "max-header-bytes", "idle-timeout", "body-timeout", "metrics", "pprof",
	"fault-reject", "fault-delay", "fault-close-after", "fault-drop",
	"ping-interval", "ping-timeout", "dashboard-replicas",
}

// The flags a group of variants reads, composed into each row's Flags.
var (
	socketIOFlags  = []string{"compression", "origin", "transports", "max-payload", "connect-timeout", "emit-auth", "ack-delay", "path", "namespaces", "push-interval", "push-size", "push-event", "push-rooms", "recovery", "allow-eio3", "admin-ui", "engine", "fault-leak-timers", "fault-drop-chunked-post"}
	webSocketFlags = []string{"max-message", "compression", "origin", "subprotocols", "subprotocol-required"}
	broadcastFlags = []string{"push-interval", "push-size", "send-queue", "slow"}
	gnetFlags      = []string{"loops"}
	clusterFlags   = []string{"redis"} // what has something to share across replicas
	delayFlags     = []string{"delay"} // the connect models that wait
)

func flags(groups ...[]string) []string { return slices.Concat(groups...) }

// catalog is every variant, in the order -list prints them: the Socket.IO
// variants, an echo per WebSocket library, echo-tcp, a broadcast per
// WebSocket library.
var catalog = slices.Concat(
	[]Variant{
		{"empty", "Socket.IO, the connect handler does nothing",
			SocketIO, Zishang520, SocketIOProtocol, flags(socketIOFlags, clusterFlags), AtOnce},
		{"async", "Socket.IO, each connect waits -delay on its own timer; nothing else waits",
			SocketIO, Zishang520, SocketIOProtocol, flags(socketIOFlags, delayFlags, clusterFlags), OwnTimer},
		{"blocking", "Socket.IO, each connect freezes the one shared loop for -delay: opens, events, pings and writes wait too (-blocking-model asyncio|node)",
			SocketIO, Zishang520, SocketIOProtocol, flags(socketIOFlags, delayFlags, []string{"blocking-model"}, clusterFlags), SharedLoop},
	},
	onEach(func(w WebSocketLibrary) Variant {
		return Variant{"echo-" + string(w.Library), "WebSocket echo on " + w.Package + ": every message back as it came" + w.loopsNote(),
			Echo, w.Library, WebSocket, flags(webSocketFlags, w.loopsFlags()), NoConnect}
	}),
	[]Variant{
		{"echo-tcp", "raw TCP echo, no framing: the floor the WebSocket echoes are measured against",
			Echo, None, TCP, nil, NoConnect},
	},
	onEach(func(w WebSocketLibrary) Variant {
		return Variant{"broadcast-" + string(w.Library), "websocket-shootout echo/broadcast (+ timed push) on " + w.Package + w.loopsNote(),
			Broadcast, w.Library, WebSocket, flags(webSocketFlags, broadcastFlags, w.loopsFlags(), clusterFlags), NoConnect}
	}),
)

// onEach makes one variant per WebSocket library.
func onEach(row func(WebSocketLibrary) Variant) []Variant {
	out := make([]Variant, len(webSocketLibraries))
	for i, w := range webSocketLibraries {
		out[i] = row(w)
	}
	return out
}

func (w WebSocketLibrary) loopsFlags() []string {
	if w.Loops {
		return gnetFlags
	}
	return nil
}

func (w WebSocketLibrary) loopsNote() string {
	if w.Loops {
		return " (-loops)"
	}
	return ""
}

// All returns every variant, in catalog order. The slice is the caller's.
func All() []Variant { return slices.Clone(catalog) }

// Lookup returns the variant called name.
func Lookup(name string) (Variant, bool) {
	i := slices.IndexFunc(catalog, func(v Variant) bool { return v.Name == name })
	if i < 0 {
		return Variant{}, false
	}
	return catalog[i], true
}

// Names returns every variant's name, in catalog order.
func Names() []string { return NamesOf(catalog) }

// NamesOf returns the names of vs, in order.
func NamesOf(vs []Variant) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

// Where returns the variants for which every predicate holds, in catalog
// order: Where(InFamily(Echo), Speaks(WebSocket)) is the WebSocket echoes.
func Where(preds ...func(Variant) bool) []Variant {
	var out []Variant
	for _, v := range catalog {
		if all(v, preds) {
			out = append(out, v)
		}
	}
	return out
}

func all(v Variant, preds []func(Variant) bool) bool {
	for _, p := range preds {
		if !p(v) {
			return false
		}
	}
	return true
}

// ByFamily returns the variants of family f, in catalog order.
func ByFamily(f Family) []Variant { return Where(InFamily(f)) }

// InFamily selects the variants of family f.
func InFamily(f Family) func(Variant) bool { return func(v Variant) bool { return v.Family == f } }

// Is selects the variants built on library l.
func Is(l Library) func(Variant) bool { return func(v Variant) bool { return v.Library == l } }

// Speaks selects the variants a client talks to in protocol p.
func Speaks(p Protocol) func(Variant) bool { return func(v Variant) bool { return v.Protocol == p } }

// ReadsWhileWriting selects the variants whose reader goes on while a
// write is under way (WebSocketLibrary.WriteBlocksRead).
func ReadsWhileWriting(v Variant) bool {
	w, ok := LookupWebSocketLibrary(v.Library)
	return !ok || !w.WriteBlocksRead
}

// OnNetHTTP selects the variants whose library serves through net/http.
func OnNetHTTP(v Variant) bool { return v.Library.NetHTTP() }

// Connects selects the Socket.IO variants whose connect model is m.
func Connects(m Connect) func(Variant) bool { return func(v Variant) bool { return v.Connect == m } }

// First returns the first variant, in catalog order, for which every
// predicate holds, and false when there is none.
func First(preds ...func(Variant) bool) (Variant, bool) {
	vs := Where(preds...)
	if len(vs) == 0 {
		return Variant{}, false
	}
	return vs[0], true
}

// Not selects what p does not.
func Not(p func(Variant) bool) func(Variant) bool { return func(v Variant) bool { return !p(v) } }

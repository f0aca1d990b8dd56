package socketio

import (
	"fmt"
	"slices"
	"time"

	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/hops"
	"github.com/knowngood/knowngood/shared/metrics"
)

// What a client sees of a Socket.IO target, written once for both
// engines: the connect models, the events and their answers, the
// known-bad modes and the counts. An engine adapts its socket and its
// arguments to the interfaces below (events.go: zishang520; native_events.go:
// the native engine); A is its form of an event's arguments.

// backend is what the behaviour needs of an engine whose namespace
// sockets are S and whose event arguments are A.
type backend[S, A any] interface {
	// emit sends an event to one socket; false if it could not.
	emit(s S, event string, args A) bool
	join(s S, room string)
	namespace(s S) string // the name of the socket's namespace
	// broadcast sends the event "broadcast" to every socket of room ("":
	// of the namespace), the sender included if it is one of them, on
	// this replica and, with -redis, the others; it returns how many of
	// this replica's sockets it went to.
	broadcast(s S, room string, args A) int
	// count calls answer with the number of sockets in room ("": the
	// namespace): local at once without -redis, the cluster's with it,
	// once every server has answered or the count's timeout has passed
	// (then on a goroutine of its own, as Node's await does).
	count(s S, room string, local int, answer func(n int))
	// disconnect sends the socket a DISCONNECT after what it was sent
	// before.
	disconnect(s S)
	// recovery tells whether the socket's client came back asking for
	// connection state recovery (a private id in its auth), and whether
	// it was recovered.
	recovery(s S) (asked, recovered bool)
	// push sends an event to every socket of the namespace "/" in room
	// ("": every one), on this replica only or, with cluster, on every
	// replica (-redis); it returns how many of this replica's it went to.
	push(room, event string, args A, cluster bool) int

	// stamp sets stamp in every argument that asks for hop stamps and
	// times the hop it ends (shared/hops).
	stamp(args A, stamp string, now time.Time, observe hops.Observe) A
	// room is the first argument as a room's name (its value as
	// fmt.Sprint prints it; "" without one) and the arguments after it.
	room(args A) (string, A)
	text(s string) A // one string argument
	number(n int) A  // one number argument
	none() A         // no argument
	// pushArg is a timed push's one argument: {"seq", "sentAt" (Unix
	// nanoseconds), "room" (when not ""), "payload"}.
	pushArg(seq uint64, sentAt int64, room, filler string) A
}

// behaviour serves the events of one target.
type behaviour[S, A any] struct {
	eng      backend[S, A]
	m        *metrics.Metrics
	faults   *faults.Injector
	emitAuth bool          // -emit-auth
	ackDelay time.Duration // -ack-delay: before the ack of an event not served otherwise
	recovery bool          // -recovery: recoveries are counted
	// received and sent, with -admin-ui, see each event a socket sent,
	// as it came, and each emitted to one socket (adminui.go).
	received, sent func(s S, name string, args A)
}

// namespacesOf are the namespaces a target has from its start besides
// "/": -namespaces, or /custom when any may be joined (the ones clients
// name are made as they come).
func namespacesOf(cfg Options) []string {
	if cfg.Namespaces == nil {
		return []string{"/custom"}
	}
	return slices.DeleteFunc(slices.Clone(cfg.Namespaces), func(n string) bool { return n == "/" })
}

// connectModel is the namespace middleware of a connect model on an
// engine whose sockets are S and whose middleware goes on with next(E)
// (nil for empty): each connect waits -delay on a timer of its own
// (async), or takes its turn on the one loop (blocking: turn, which holds
// the loop for the delay, as a synchronous call in an asyncio or Node
// handler holds the event loop; freeze.go makes everything else the loop
// serves wait meanwhile).
func connectModel[S, E any](mode Mode, delay time.Duration, turn func(S, func(E))) (func(S, func(E)), error) {
	switch mode {
	case Empty:
		// No middleware: the engine then goes on to the connect at once,
		// without building a middleware chain on every connect.
		return nil, nil
	case Async:
		return func(_ S, next func(E)) {
			var ok E
			time.AfterFunc(delay, func() { next(ok) })
		}, nil
	case Blocking:
		return turn, nil
	}
	return nil, fmt.Errorf("unknown connect model %q", mode)
}

// connected runs once a socket's CONNECT ack is written: the leaked timer
// of -fault-leak-timers, and with -emit-auth an "auth" event carrying the
// handshake's auth object (auth, in the engine's form).
func (b *behaviour[S, A]) connected(s S, holder any, auth func() A) {
	b.m.NamespaceConnect(b.eng.namespace(s))
	if b.recovery {
		switch asked, recovered := b.eng.recovery(s); {
		case recovered:
			b.m.Recovery("recovered")
		case asked:
			b.m.Recovery("missed")
		}
	}
	b.faults.LeakTimer(holder)
	if b.emitAuth {
		b.emit(s, "auth", auth())
	}
}

// event counts an event and serves it, with the known-bad modes in force;
// events counts them for -fault-close-after.
func (b *behaviour[S, A]) event(s S, name string, args A, ack func(A), events *faults.Count) {
	b.m.Received(1, 0)
	if b.received != nil {
		b.received(s, name, args)
	}
	h := b.handlerOf(name)
	args = b.eng.stamp(args, hops.Received, time.Now(), b.m.Hop)
	if !b.faults.On() {
		h(s, args, ack)
		return
	}
	b.withFaults(s, events, func() { h(s, args, ack) })
}

// handler serves one event: its arguments, and the acknowledgement
// callback when the client asked for one (nil otherwise).
type handler[S, A any] func(s S, args A, ack func(A))

// handlerOf is the handler of an event.
func (b *behaviour[S, A]) handlerOf(name string) handler[S, A] {
	switch name {
	case "echo":
		return b.onEcho
	case "message":
		return b.onMessage
	case "message-with-ack":
		return b.onMessageWithAck
	case "broadcast":
		return b.onBroadcast
	case "broadcast-room":
		return b.onBroadcastRoom
	case "join":
		return b.onJoin
	}
	return b.onAny
}

// echo: the arguments come back in the ack (or as an "echo" event when
// the client asked for no ack).
func (b *behaviour[S, A]) onEcho(s S, args A, ack func(A)) {
	args = b.eng.stamp(args, hops.Sent, time.Now(), b.m.Hop)
	if ack == nil {
		b.emit(s, "echo", args)
		return
	}
	b.ack(ack, args)
}

// message: the arguments come back as a "message-back" event, and the ack,
// if asked for, is empty.
func (b *behaviour[S, A]) onMessage(s S, args A, ack func(A)) {
	args = b.eng.stamp(args, hops.Sent, time.Now(), b.m.Hop)
	b.emit(s, "message-back", args)
	if ack != nil {
		b.ack(ack, b.eng.none())
	}
}

// message-with-ack: the arguments come back in the ack.
func (b *behaviour[S, A]) onMessageWithAck(_ S, args A, ack func(A)) {
	if ack != nil {
		b.ack(ack, b.eng.stamp(args, hops.Sent, time.Now(), b.m.Hop))
	}
}

// broadcast: the arguments go, as a "broadcast" event, to every socket of
// the namespace, the sender included; the ack carries the count
// (cluster-wide with -redis).
func (b *behaviour[S, A]) onBroadcast(s S, args A, ack func(A)) {
	args = b.eng.stamp(args, hops.Sent, time.Now(), b.m.Hop)
	listeners := b.eng.broadcast(s, "", args)
	b.m.Sent(listeners, 0)
	if ack != nil {
		b.eng.count(s, "", listeners, func(n int) { b.ack(ack, b.eng.number(n)) })
	}
}

// broadcast-room: the arguments after the first go, as a "broadcast"
// event, to every socket in the room named by the first, the sender
// included if it joined; the ack carries the room's count.
func (b *behaviour[S, A]) onBroadcastRoom(s S, args A, ack func(A)) {
	room, rest := b.eng.room(args)
	listeners := 0
	if room != "" {
		rest = b.eng.stamp(rest, hops.Sent, time.Now(), b.m.Hop)
		listeners = b.eng.broadcast(s, room, rest)
		b.m.Sent(listeners, 0)
	}
	if ack != nil {
		b.eng.count(s, room, listeners, func(n int) { b.ack(ack, b.eng.number(n)) })
	}
}

// any other event: the ack, if the client asked for one, carries its
// arguments back, after -ack-delay, so that a script written for another
// service's events (chat:message, trade_update...) gets its acks; without
// an ack the event is only counted.
func (b *behaviour[S, A]) onAny(_ S, args A, ack func(A)) {
	if ack == nil {
		return
	}
	if b.ackDelay <= 0 {
		b.ack(ack, b.eng.stamp(args, hops.Sent, time.Now(), b.m.Hop))
		return
	}
	time.AfterFunc(b.ackDelay, func() { b.ack(ack, b.eng.stamp(args, hops.Sent, time.Now(), b.m.Hop)) })
}

// join: the socket joins the room named by the first argument; the ack
// carries the room's name.
func (b *behaviour[S, A]) onJoin(s S, args A, ack func(A)) {
	room, _ := b.eng.room(args)
	if room != "" {
		b.eng.join(s, room)
	}
	if ack != nil {
		b.ack(ack, b.eng.text(room))
	}
}

// push sends one timed push (-push-interval) to the sockets of room
// ("": all of them), of this replica or of the cluster, and counts what
// this replica sent.
func (b *behaviour[S, A]) push(event, room string, seq uint64, filler string, cluster bool) {
	b.m.Sent(b.eng.push(room, event, b.eng.pushArg(seq, time.Now().UnixNano(), room, filler), cluster), 0)
}

// withFaults runs an event's handler with the known-bad modes in force
// applied, as one look at them decides: -fault-drop leaves the event
// unanswered, -fault-delay answers it that much later (on a timer of its
// own, as a handler that awaits a sleep: the socket's other events go on,
// and an event that came after a change of the delay may be answered
// before one that came before it), -fault-close-after disconnects the
// socket (a Socket.IO DISCONNECT, after the answer to the last event)
// after that many events, counted in events.
func (b *behaviour[S, A]) withFaults(s S, events *faults.Count, handle func()) {
	fate := b.faults.Message(events)
	run := func() {
		if !fate.Drop {
			handle()
		}
		if fate.Close {
			b.eng.disconnect(s)
		}
	}
	if fate.Delay > 0 {
		time.AfterFunc(fate.Delay, run)
		return
	}
	run()
}

// emit sends an event to one socket and counts it.
func (b *behaviour[S, A]) emit(s S, event string, args A) {
	if b.eng.emit(s, event, args) {
		b.m.Sent(1, 0)
		if b.sent != nil {
			b.sent(s, event, args)
		}
	}
}

// ack answers an event's acknowledgement and counts it.
func (b *behaviour[S, A]) ack(ack func(A), args A) {
	ack(args)
	b.m.Sent(1, 0)
}

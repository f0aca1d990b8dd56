package socketio

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zishang520/socket.io/servers/socket/v3"

	"github.com/knowngood/knowngood/servers/internal/cluster/sioredis"
	"github.com/knowngood/knowngood/shared/hops"
)

// onConnect runs after the CONNECT ack was written for a namespace: the
// first one of an Engine.IO session ends its handshake.
func (s *Server) onConnect(sock *socket.Socket) {
	if v, ok := s.sessions.Load(sock.Conn().Id()); ok {
		sess := v.(*session)
		sess.registeredOne()
		s.freeze.settle(sess.slot, func(gone bool) { settleHandshake(s.m, &sess.settled, sess.transport, sess.start, gone) })
	}
	s.faults.LeakTimer(sock)
	if s.cfg.SocketIO.EmitAuth {
		auth := sock.Handshake().Auth
		if auth == nil {
			auth = map[string]any{}
		}
		s.emit(sock, "auth", auth)
	}

	// One listener serves every event, handled or not (each counts as
	// received): the library's emitter costs several allocations for every
	// listener added, and a listener per event would be added on every
	// connect. It runs on the socket's task queue, in the order the events
	// arrived, as listeners per event do (which the library runs one turn of
	// that queue later).
	var events *atomic.Int64 // counted for the known-bad modes
	if s.faults != nil {
		events = new(atomic.Int64)
	}
	_ = sock.OnAny(func(args ...any) {
		s.m.Received(1, 0)
		if len(args) == 0 {
			return
		}
		name, _ := args[0].(string)
		h := eventHandler(name)
		if h == nil {
			return
		}
		args, ack := splitAck(args[1:])
		s.stampHops(args, hops.Received)
		if events == nil {
			h(s, sock, args, ack)
			return
		}
		s.withFaults(sock, events, func() { h(s, sock, args, ack) })
	})
}

// handler serves one event: its arguments, and the acknowledgement
// callback when the client asked for one (nil otherwise).
type handler func(s *Server, sock *socket.Socket, args []any, ack socket.Ack)

// eventHandler is the handler of an event; nil for an event not served.
func eventHandler(name string) handler {
	switch name {
	case "echo":
		return (*Server).onEcho
	case "message":
		return (*Server).onMessage
	case "message-with-ack":
		return (*Server).onMessageWithAck
	case "broadcast":
		return (*Server).onBroadcast
	case "broadcast-room":
		return (*Server).onBroadcastRoom
	case "join":
		return (*Server).onJoin
	}
	return nil
}

// echo: the arguments come back in the ack (or as an "echo" event when
// the client asked for no ack).
func (s *Server) onEcho(sock *socket.Socket, args []any, ack socket.Ack) {
	s.stampHops(args, hops.Sent)
	if ack == nil {
		s.emit(sock, "echo", args...)
		return
	}
	s.ack(ack, args...)
}

// message: the arguments come back as a "message-back" event, and the ack,
// if asked for, is empty.
func (s *Server) onMessage(sock *socket.Socket, args []any, ack socket.Ack) {
	s.stampHops(args, hops.Sent)
	s.emit(sock, "message-back", args...)
	if ack != nil {
		s.ack(ack)
	}
}

// message-with-ack: the arguments come back in the ack.
func (s *Server) onMessageWithAck(_ *socket.Socket, args []any, ack socket.Ack) {
	if ack != nil {
		s.stampHops(args, hops.Sent)
		s.ack(ack, args...)
	}
}

// broadcast: the arguments go, as a "broadcast" event, to every socket of
// the namespace, the sender included; the ack carries the count
// (cluster-wide with -redis: see ackCount).
func (s *Server) onBroadcast(sock *socket.Socket, args []any, ack socket.Ack) {
	listeners := sock.Nsp().Sockets().Len()
	s.stampHops(args, hops.Sent)
	_ = sock.Nsp().Emit("broadcast", args...)
	s.m.Sent(listeners, 0)
	if ack != nil {
		s.ackCount(sock, ack, "", listeners)
	}
}

// broadcast-room: the arguments after the first go, as a "broadcast"
// event, to every socket in the room named by the first, the sender
// included if it joined; the ack carries the room's count.
func (s *Server) onBroadcastRoom(sock *socket.Socket, args []any, ack socket.Ack) {
	room, listeners := "", 0
	if len(args) > 0 {
		room, args = fmt.Sprint(args[0]), args[1:]
	}
	if room != "" {
		if ids, ok := sock.Nsp().Adapter().Rooms().Load(socket.Room(room)); ok {
			listeners = ids.Len()
		}
		s.stampHops(args, hops.Sent)
		_ = sock.Nsp().To(socket.Room(room)).Emit("broadcast", args...)
		s.m.Sent(listeners, 0)
	}
	if ack != nil {
		s.ackCount(sock, ack, room, listeners)
	}
}

// join: the socket joins the room named by the first argument; the ack
// carries the room's name.
func (s *Server) onJoin(sock *socket.Socket, args []any, ack socket.Ack) {
	room := ""
	if len(args) > 0 {
		room = fmt.Sprint(args[0])
	}
	if room != "" {
		sock.Join(socket.Room(room))
	}
	if ack != nil {
		s.ack(ack, room)
	}
}

// ackCount answers a broadcast's ack with its count: local, this
// replica's sockets, at once; with -redis, the cluster's, once every
// server has answered or sioredis.CountTimeout has passed (then the count
// leaves out the servers that did not answer), on a goroutine of its own so
// that the socket's other events go on meanwhile, as Node's await does.
func (s *Server) ackCount(sock *socket.Socket, ack socket.Ack, room string, local int) {
	a, ok := sock.Nsp().Adapter().(*sioredis.Adapter)
	// Once closing, Shutdown may be waiting for the counts already.
	if !ok || s.closed.Load() {
		s.ack(ack, local)
		return
	}
	var rooms []string
	if room != "" {
		rooms = []string{room}
	}
	s.counts.Go(func() { s.ack(ack, a.Count(rooms).Sockets) })
}

// withFaults runs an event's handler (run) with the known-bad modes
// applied: -fault-drop leaves the event unanswered, -fault-delay answers it
// that much later (on a timer: the socket's queue goes on),
// -fault-close-after disconnects the socket (a Socket.IO DISCONNECT, after
// the answer to the last event) after that many events, counted in events.
func (s *Server) withFaults(sock *socket.Socket, events *atomic.Int64, handle func()) {
	drop, closeAfter := s.faults.Message(int(events.Add(1)))
	run := func() {
		if !drop {
			handle()
		}
		if closeAfter {
			// Disconnect the socket: its DISCONNECT goes out after the
			// answer above, on the same transport. Closing the transport
			// itself (true) could lose that answer.
			sock.Disconnect(false)
		}
	}
	if !drop {
		if d := s.faults.Delay(); d > 0 {
			time.AfterFunc(d, run)
			return
		}
	}
	run()
}

// emit sends an event to one socket and counts it.
func (s *Server) emit(sock *socket.Socket, event string, args ...any) {
	if err := sock.Emit(event, args...); err == nil {
		s.m.Sent(1, 0)
	}
}

// stampHops sets stamp in every argument that asks for hop stamps, and
// times the hop it ends (see shared/hops).
func (s *Server) stampHops(args []any, stamp string) {
	now := time.Now()
	for _, a := range args {
		hops.Value(a, stamp, now, s.m.Hop)
	}
}

// ack answers an event's acknowledgement and counts it.
func (s *Server) ack(ack socket.Ack, args ...any) {
	if args == nil {
		args = []any{}
	}
	ack(args, nil)
	s.m.Sent(1, 0)
}

// splitAck separates the acknowledgement callback, which the library
// appends as the last argument when the client asked for one.
func splitAck(args []any) ([]any, socket.Ack) {
	if n := len(args); n > 0 {
		if ack, ok := args[n-1].(socket.Ack); ok {
			return args[:n-1], ack
		}
	}
	return args, nil
}

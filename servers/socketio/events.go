package socketio

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zishang520/socket.io/servers/socket/v3"

	"github.com/knowngood/knowngood/shared/cluster/sioredis"
	"github.com/knowngood/knowngood/shared/protocol"
)

// onConnect runs after the CONNECT ack was written for a namespace: the
// first one of an Engine.IO session ends its handshake.
func (s *Server) onConnect(sock *socket.Socket) {
	if v, ok := s.sessions.Load(sock.Conn().Id()); ok {
		sess := v.(*session)
		sess.registering.Add(-1)
		if sess.settled.CompareAndSwap(false, true) {
			s.m.Handshake(protocol.ResultOK, sess.transport, time.Since(sess.start))
		}
	}
	if s.cfg.SocketIO.EmitAuth {
		auth := sock.Handshake().Auth
		if auth == nil {
			auth = map[string]any{}
		}
		s.emit(sock, "auth", auth)
	}

	// Every event a client sends counts as received, handled or not.
	sock.OnAny(func(...any) { s.m.Received(1, 0) })

	// echo: the arguments come back in the ack (or as an "echo" event when
	// the client asked for no ack).
	on := s.withFaults(sock)
	on("echo", func(args ...any) {
		args, ack := splitAck(args)
		if ack == nil {
			s.emit(sock, "echo", args...)
			return
		}
		s.ack(ack, args...)
	})
	on("message", func(args ...any) {
		args, ack := splitAck(args)
		s.emit(sock, "message-back", args...)
		if ack != nil {
			s.ack(ack)
		}
	})
	on("message-with-ack", func(args ...any) {
		args, ack := splitAck(args)
		if ack != nil {
			s.ack(ack, args...)
		}
	})
	// broadcast: the arguments go, as a "broadcast" event, to every socket
	// of the namespace, the sender included; the ack carries the count
	// (cluster-wide with -redis: see ackCount).
	on("broadcast", func(args ...any) {
		args, ack := splitAck(args)
		listeners := sock.Nsp().Sockets().Len()
		_ = sock.Nsp().Emit("broadcast", args...)
		s.m.Sent(listeners, 0)
		if ack != nil {
			s.ackCount(sock, ack, "", listeners)
		}
	})
	// broadcast-room: the arguments after the first go, as a "broadcast"
	// event, to every socket in the room named by the first, the sender
	// included if it joined; the ack carries the room's count.
	on("broadcast-room", func(args ...any) {
		args, ack := splitAck(args)
		room, listeners := "", 0
		if len(args) > 0 {
			room, args = fmt.Sprint(args[0]), args[1:]
		}
		if room != "" {
			if ids, ok := sock.Nsp().Adapter().Rooms().Load(socket.Room(room)); ok {
				listeners = ids.Len()
			}
			_ = sock.Nsp().To(socket.Room(room)).Emit("broadcast", args...)
			s.m.Sent(listeners, 0)
		}
		if ack != nil {
			s.ackCount(sock, ack, room, listeners)
		}
	})
	// join: the socket joins the room named by the first argument; the ack
	// carries the room's name.
	on("join", func(args ...any) {
		args, ack := splitAck(args)
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
	})
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

// withFaults returns sock.On with the known-bad modes applied to every
// event of the socket: -fault-drop leaves an event unanswered,
// -fault-delay answers it that much later (on a timer: the library's
// reader goes on), -fault-close-after disconnects the socket (a Socket.IO
// DISCONNECT, after the answer to the last event) after that many events.
// Without them it is sock.On itself.
func (s *Server) withFaults(sock *socket.Socket) func(string, func(...any)) {
	if s.faults == nil {
		return func(event string, h func(...any)) { _ = sock.On(event, h) }
	}
	var events atomic.Int64
	return func(event string, h func(...any)) {
		_ = sock.On(event, func(args ...any) {
			drop, closeAfter := s.faults.Message(int(events.Add(1)))
			run := func() {
				if !drop {
					h(args...)
				}
				if closeAfter {
					// Disconnect the socket: its DISCONNECT goes out after
					// the answer above, on the same transport. Closing the
					// transport itself (true) could lose that answer.
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
		})
	}
}

// emit sends an event to one socket and counts it.
func (s *Server) emit(sock *socket.Socket, event string, args ...any) {
	if err := sock.Emit(event, args...); err == nil {
		s.m.Sent(1, 0)
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

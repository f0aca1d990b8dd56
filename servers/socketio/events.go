package socketio

import (
	"fmt"
	"time"

	"github.com/zishang520/socket.io/servers/socket/v3"

	"github.com/knowngood/knowngood/servers/internal/cluster/sioredis"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/hops"
)

// onConnect runs after the CONNECT ack was written for a namespace: the
// first one of an Engine.IO session ends its handshake.
func (s *Server) onConnect(sock *socket.Socket) {
	if v, ok := s.sessions.Load(sock.Conn().Id()); ok {
		sess := v.(*session)
		sess.addSocket(sock)
		sess.registeredOne()
		s.freeze.settle(sess.slot, func(gone bool) { settleHandshake(s.m, &sess.settled, sess.transport, time.Since(sess.start), gone) })
	}
	if s.admin != nil {
		s.admin.socketConnected(sock)
	}
	s.b.connected(sock, sock, func() []any {
		auth := sock.Handshake().Auth
		if auth == nil {
			auth = map[string]any{}
		}
		return []any{auth}
	})

	// One listener serves every event, handled or not (each counts as
	// received): the library's emitter costs several allocations for every
	// listener added, and a listener per event would be added on every
	// connect. It runs on the socket's task queue, in the order the events
	// arrived, as listeners per event do (which the library runs one turn of
	// that queue later).
	// Counted for -fault-close-after, which may be switched on at any
	// time: 8 bytes of each socket's listener.
	events := new(faults.Count)
	_ = sock.OnAny(func(args ...any) {
		if len(args) == 0 {
			s.m.Received(1, 0)
			return
		}
		name, _ := args[0].(string)
		args, ack := splitAck(args[1:])
		var answer func([]any)
		if ack != nil {
			answer = func(a []any) { ack(a, nil) }
		}
		s.b.event(sock, name, args, answer, events)
	})
}

// zishang is the zishang520 library as the behaviour's backend: its
// sockets, and arguments as the library hands them over ([]any, the ack
// split off).
type zishang struct{ s *Server }

func (zishang) emit(sock *socket.Socket, event string, args []any) bool {
	return sock.Emit(event, args...) == nil
}

func (zishang) recovery(sock *socket.Socket) (asked, recovered bool) {
	_, asked = sock.Handshake().Auth["pid"].(string)
	return asked, sock.Recovered()
}

func (zishang) join(sock *socket.Socket, room string) { sock.Join(socket.Room(room)) }

func (zishang) namespace(sock *socket.Socket) string { return sock.Nsp().Name() }

func (zishang) broadcast(sock *socket.Socket, room string, args []any) int {
	return emitTo(sock.Nsp(), false, room, "broadcast", args)
}

func (z zishang) count(sock *socket.Socket, room string, local int, answer func(int)) {
	a, ok := sock.Nsp().Adapter().(*sioredis.Adapter)
	// Once closing, Shutdown may be waiting for the counts already.
	if !ok || z.s.closed.Load() {
		answer(local)
		return
	}
	var rooms []string
	if room != "" {
		rooms = []string{room}
	}
	z.s.counts.Go(func() { answer(a.Count(rooms).Sockets) })
}

// disconnect sends the DISCONNECT on the socket's transport, after what
// it was sent before; closing the transport itself (true) could lose that.
func (zishang) disconnect(sock *socket.Socket) { sock.Disconnect(false) }

func (zishang) stamp(args []any, stamp string, now time.Time, observe hops.Observe) []any {
	for _, a := range args {
		hops.Value(a, stamp, now, observe)
	}
	return args
}

func (zishang) room(args []any) (string, []any) {
	if len(args) == 0 {
		return "", args
	}
	return fmt.Sprint(args[0]), args[1:]
}

func (z zishang) push(room, event string, args []any, cluster bool) int {
	return emitTo(z.s.io.Of("/", nil), !cluster, room, event, args)
}

// emitTo emits an event to room ("": every socket) of nsp, on this replica
// alone when local, and returns how many of this replica's sockets it went
// to.
func emitTo(nsp socket.Namespace, local bool, room, event string, args []any) int {
	op := nsp.To()
	if local {
		op = op.Local()
	}
	listeners := nsp.Sockets().Len()
	if room != "" {
		listeners = 0
		if ids, ok := nsp.Adapter().Rooms().Load(socket.Room(room)); ok {
			listeners = ids.Len()
		}
		op = op.To(socket.Room(room))
	}
	_ = op.Emit(event, args...)
	return listeners
}

func (zishang) pushArg(seq uint64, sentAt int64, room, filler string) []any {
	arg := map[string]any{"seq": seq, "sentAt": sentAt, "payload": filler}
	if room != "" {
		arg["room"] = room
	}
	return []any{arg}
}

func (zishang) text(s string) []any { return []any{s} }
func (zishang) number(n int) []any  { return []any{n} }
func (zishang) none() []any         { return []any{} }

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

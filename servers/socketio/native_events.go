package socketio

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/knowngood/knowngood/servers/sioengine"
	"github.com/knowngood/knowngood/shared/hops"
)

// connectHook is the namespace middleware of a connect model on the
// native engine (none for empty), as connectMiddleware is on zishang520.
func (n *native) connectHook(mode Mode) (func(*sioengine.Socket, func(error)), error) {
	delay := n.cfg.SocketIO.Delay
	switch mode {
	case Empty:
		return nil, nil
	case Async:
		return func(_ *sioengine.Socket, next func(error)) {
			time.AfterFunc(delay, func() { next(nil) })
		}, nil
	case Blocking:
		return n.takeTurn, nil
	}
	return nil, fmt.Errorf("unknown connect model %q", mode)
}

// takeTurn queues a connect on the blocking model's one loop, with the
// bounds of the zishang520 target's takeTurn: one place per session and
// namespace, repeats answered after the same turn, more than
// maxRepeatedConnects of them close the session; a connect whose client
// has gone still holds the loop.
func (n *native) takeTurn(sock *sioengine.Socket, next func(error)) {
	conn := sock.Conn()
	sess := conn.Data.(*nativeSession)
	hold := func() { holdLoop(n.cfg.SocketIO.Delay, n.m, conn.Open() && !sess.slot.gone()) }
	if !sess.turns.take(n.loop, sess.slot, sock.Namespace().Name(), next, hold) {
		conn.Close()
	}
}

// nativeHandler serves one event on the native engine.
type nativeHandler func(n *native, s *sioengine.Socket, e *sioengine.Event)

func nativeEventHandler(name string) nativeHandler {
	switch name {
	case "echo":
		return (*native).onEcho
	case "message":
		return (*native).onMessage
	case "message-with-ack":
		return (*native).onMessageWithAck
	case "broadcast":
		return (*native).onBroadcast
	case "broadcast-room":
		return (*native).onBroadcastRoom
	case "join":
		return (*native).onJoin
	}
	return nil
}

// event counts an event and serves it, with the known-bad modes.
func (n *native) event(s *sioengine.Socket, e *sioengine.Event) {
	n.m.Received(1, 0)
	h := nativeEventHandler(e.Name)
	if h == nil {
		return
	}
	n.stampHops(e.Args, hops.Received)
	if n.faults == nil {
		h(n, s, e)
		return
	}
	sess := s.Conn().Data.(*nativeSession)
	n.withFaults(s, &sess.events, func() { h(n, s, e) })
}

// withFaults is the zishang520 target's withFaults on the native engine.
func (n *native) withFaults(s *sioengine.Socket, events *atomic.Int64, handle func()) {
	drop, closeAfter := n.faults.Message(int(events.Add(1)))
	run := func() {
		if !drop {
			handle()
		}
		if closeAfter {
			s.Disconnect()
		}
	}
	if !drop {
		if d := n.faults.Delay(); d > 0 {
			time.AfterFunc(d, run)
			return
		}
	}
	run()
}

func (n *native) onEcho(s *sioengine.Socket, e *sioengine.Event) {
	n.stampHops(e.Args, hops.Sent)
	if !e.HasAck() {
		n.emitWith(s, "echo", e.Args, e.Attachments)
		return
	}
	n.ack(e, e.Args, e.Attachments)
}

func (n *native) onMessage(s *sioengine.Socket, e *sioengine.Event) {
	n.stampHops(e.Args, hops.Sent)
	n.emitWith(s, "message-back", e.Args, e.Attachments)
	if e.HasAck() {
		n.ack(e, nil, nil)
	}
}

func (n *native) onMessageWithAck(_ *sioengine.Socket, e *sioengine.Event) {
	if e.HasAck() {
		n.stampHops(e.Args, hops.Sent)
		n.ack(e, e.Args, e.Attachments)
	}
}

func (n *native) onBroadcast(s *sioengine.Socket, e *sioengine.Event) {
	n.stampHops(e.Args, hops.Sent)
	listeners := s.Namespace().Broadcast("", "broadcast", e.Args, e.Attachments)
	n.m.Sent(listeners, 0)
	n.publish(s, "", e.Args, e.Attachments)
	if e.HasAck() {
		n.ackCount(s, e, "", listeners)
	}
}

func (n *native) onBroadcastRoom(s *sioengine.Socket, e *sioengine.Event) {
	room, args, listeners := "", e.Args, 0
	if len(args) > 0 {
		room, args = roomName(args[0]), args[1:]
	}
	if room != "" {
		n.stampHops(args, hops.Sent)
		listeners = s.Namespace().Broadcast(room, "broadcast", args, e.Attachments)
		n.m.Sent(listeners, 0)
		n.publish(s, room, args, e.Attachments)
	}
	if e.HasAck() {
		n.ackCount(s, e, room, listeners)
	}
}

func (n *native) onJoin(s *sioengine.Socket, e *sioengine.Event) {
	room := ""
	if len(e.Args) > 0 {
		room = roomName(e.Args[0])
	}
	if room != "" {
		s.Join(room)
	}
	if e.HasAck() {
		name, _ := json.Marshal(room)
		n.ack(e, []json.RawMessage{name}, nil)
	}
}

// roomName is an argument as the zishang520 target names a room: the
// decoded value as fmt.Sprint prints it.
func roomName(arg json.RawMessage) string {
	var v any
	if json.Unmarshal(arg, &v) != nil {
		return ""
	}
	return fmt.Sprint(v)
}

// stampHops sets stamp in every argument that asks for hop stamps, and
// times the hop it ends (see shared/hops).
func (n *native) stampHops(args []json.RawMessage, stamp string) {
	now := time.Now()
	for i, a := range args {
		args[i] = hops.JSON(a, stamp, now, n.m.Hop)
	}
}

func (n *native) emit(s *sioengine.Socket, event string, args ...json.RawMessage) {
	n.emitWith(s, event, args, nil)
}

// emitWith sends an event to one socket and counts it.
func (n *native) emitWith(s *sioengine.Socket, event string, args []json.RawMessage, attachments [][]byte) {
	if s.Emit(event, args, attachments) {
		n.m.Sent(1, 0)
	}
}

// ack answers an event's acknowledgement and counts it.
func (n *native) ack(e *sioengine.Event, args []json.RawMessage, attachments [][]byte) {
	e.Ack(args, attachments)
	n.m.Sent(1, 0)
}

package socketio

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/knowngood/knowngood/servers/sioengine"
	"github.com/knowngood/knowngood/shared/hops"
)

// takeTurn queues a connect on the blocking model's one loop, with the
// bounds of the zishang520 target's takeTurn: one place per session and
// namespace, repeats answered after the same turn, more than
// maxRepeatedConnects of them close the session; a connect whose client
// has gone still holds the loop.
func (n *native) takeTurn(sock *sioengine.Socket, next func(error)) {
	conn := sock.Conn()
	sess := conn.Data.(*nativeSession)
	hold := func() { holdLoop(n.cfg.Delay, n.m, conn.Open() && !sess.slot.gone()) }
	if !sess.turns.take(n.loop, sess.slot, sock.Namespace().Name(), next, hold) {
		conn.Close()
	}
}

// event counts an event and serves it, with the known-bad modes.
func (n *native) event(s *sioengine.Socket, e *sioengine.Event) {
	var answer func(nativeArgs)
	if e.HasAck() {
		answer = func(a nativeArgs) { e.Ack(a.vals, a.attachments) }
	}
	sess := s.Conn().Data.(*nativeSession)
	n.b.event(s, e.Name, nativeArgs{e.Args, e.Attachments}, answer, &sess.events)
}

// nativeArgs are an event's arguments on the native engine: each a JSON
// value as it came, and the binary attachments its placeholders point to.
type nativeArgs struct {
	vals        []json.RawMessage
	attachments [][]byte
}

// nativeBackend is the native engine as the behaviour's backend.
type nativeBackend struct{ n *native }

func (nativeBackend) emit(s *sioengine.Socket, event string, args nativeArgs) bool {
	return s.Emit(event, args.vals, args.attachments)
}

func (nativeBackend) recovery(s *sioengine.Socket) (asked, recovered bool) {
	var auth struct {
		PID any `json:"pid"`
	}
	_ = json.Unmarshal(s.Auth(), &auth)
	_, asked = auth.PID.(string)
	return asked, s.Recovered()
}

func (nativeBackend) join(s *sioengine.Socket, room string) { s.Join(room) }

func (nativeBackend) namespace(s *sioengine.Socket) string { return s.Namespace().Name() }

// broadcast delivers on this replica, then hands the broadcast to the
// other servers (-redis).
func (b nativeBackend) broadcast(s *sioengine.Socket, room string, args nativeArgs) int {
	listeners := s.Namespace().Broadcast(room, "broadcast", args.vals, args.attachments)
	if a := b.n.adapter(s.Namespace().Name()); a != nil {
		a.Publish(room, "broadcast", args.vals, args.attachments)
	}
	return listeners
}

func (b nativeBackend) count(s *sioengine.Socket, room string, local int, answer func(int)) {
	a := b.n.adapter(s.Namespace().Name())
	// Once closing, Shutdown may be waiting for the counts already.
	if a == nil || b.n.closed.Load() {
		answer(local)
		return
	}
	var rooms []string
	if room != "" {
		rooms = []string{room}
	}
	b.n.counts.Go(func() { answer(a.Count(rooms).Sockets) })
}

func (nativeBackend) disconnect(s *sioengine.Socket) { s.Disconnect() }

func (nativeBackend) stamp(args nativeArgs, stamp string, now time.Time, observe hops.Observe) nativeArgs {
	for i, a := range args.vals {
		args.vals[i] = hops.JSON(a, stamp, now, observe)
	}
	return args
}

// room names a room as the zishang520 target does: the first argument's
// decoded value as fmt.Sprint prints it.
func (nativeBackend) room(args nativeArgs) (string, nativeArgs) {
	if len(args.vals) == 0 {
		return "", args
	}
	var v any
	room := ""
	if json.Unmarshal(args.vals[0], &v) == nil {
		room = fmt.Sprint(v)
	}
	return room, nativeArgs{args.vals[1:], args.attachments}
}

func (nativeBackend) text(s string) nativeArgs {
	v, _ := json.Marshal(s)
	return nativeArgs{vals: []json.RawMessage{v}}
}

func (nativeBackend) number(n int) nativeArgs {
	return nativeArgs{vals: []json.RawMessage{strconv.AppendInt(nil, int64(n), 10)}}
}

func (nativeBackend) none() nativeArgs { return nativeArgs{} }

func (b nativeBackend) push(room, event string, args nativeArgs, cluster bool) int {
	listeners := b.n.eng.Namespace("/").Broadcast(room, event, args.vals, nil)
	if a := b.n.adapter("/"); cluster && a != nil {
		a.Publish(room, event, args.vals, nil)
	}
	return listeners
}

func (nativeBackend) pushArg(seq uint64, sentAt int64, room, filler string) nativeArgs {
	v := append([]byte(`{"seq":`), strconv.FormatUint(seq, 10)...)
	v = append(append(v, `,"sentAt":`...), strconv.FormatInt(sentAt, 10)...)
	if room != "" {
		name, _ := json.Marshal(room)
		v = append(append(v, `,"room":`...), name...)
	}
	payload, _ := json.Marshal(filler)
	v = append(append(append(v, `,"payload":`...), payload...), '}')
	return nativeArgs{vals: []json.RawMessage{v}}
}

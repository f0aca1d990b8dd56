package sioengine

import (
	"encoding/json"
	"slices"
	"sync"
)

// maxRooms bounds the rooms one socket may be in; a join past it is
// refused (Join returns false).
const maxRooms = 1024

// Namespace is a Socket.IO namespace: its sockets and their rooms.
type Namespace struct {
	name string

	mu      sync.RWMutex
	sockets map[*Socket]struct{}
	rooms   map[string]map[*Socket]struct{}
	// ids holds the sockets by id: as in Node, each socket is in the room
	// named by its id (without a set of its own for it).
	ids map[string]*Socket
	// rec keeps what recovers its sockets (Options.Recovery); nil: off.
	rec *recovery
}

func newNamespace(name string, o Options) *Namespace {
	n := &Namespace{name: name, sockets: map[*Socket]struct{}{}, rooms: map[string]map[*Socket]struct{}{},
		ids: map[string]*Socket{}}
	if o.Recovery > 0 {
		n.rec = newRecovery(o.Recovery, o.Hooks.Evicted)
	}
	return n
}

// Name is the namespace's name ("/", "/custom").
func (n *Namespace) Name() string { return n.name }

// Len is the number of sockets in the namespace.
func (n *Namespace) Len() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return len(n.sockets)
}

// RoomLen is the number of sockets in a room.
func (n *Namespace) RoomLen(room string) int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	count := len(n.rooms[room])
	if n.ownRoom(room) != nil {
		count++
	}
	return count
}

func (n *Namespace) add(s *Socket) {
	n.mu.Lock()
	n.sockets[s] = struct{}{}
	n.ids[s.id] = s
	n.mu.Unlock()
}

func (n *Namespace) remove(s *Socket) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.sockets, s)
	delete(n.ids, s.id)
	for _, room := range s.rooms {
		members := n.rooms[room]
		delete(members, s)
		if len(members) == 0 {
			delete(n.rooms, room)
		}
	}
	s.rooms = nil
}

// joined is a copy of the rooms the socket joined by name.
// joined is a copy of the rooms the socket joined by name.
func (n *Namespace) joined(s *Socket) []string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return slices.Clone(s.rooms)
}

// join puts s in room: ok unless s has left or is in maxRooms rooms;
// added when it was not in the room before.
func (n *Namespace) join(s *Socket, room string) (ok, added bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, in := n.sockets[s]; !in {
		return false, false
	}
	members := n.rooms[room]
	if _, in := members[s]; in {
		return true, false
	}
	if len(s.rooms) >= maxRooms {
		return false, false
	}
	if members == nil {
		members = map[*Socket]struct{}{}
		n.rooms[room] = members
	}
	members[s] = struct{}{}
	s.rooms = append(s.rooms, room)
	return true, true
}

// members returns the sessions of a room ("" = the whole namespace).
func (n *Namespace) members(room string, into []*Conn) []*Conn {
	n.mu.RLock()
	defer n.mu.RUnlock()
	set := n.sockets
	if room != "" {
		set = n.rooms[room]
	}
	for s := range set {
		into = append(into, s.conn)
	}
	if s := n.ownRoom(room); s != nil {
		into = append(into, s.conn)
	}
	return into
}

var memberSlices = sync.Pool{New: func() any { s := make([]*Conn, 0, 64); return &s }}

// Broadcast sends an event to every socket of a room ("" = the
// namespace), and returns how many it went to. The packet is encoded
// once, and the same frames are queued on every session.
func (n *Namespace) Broadcast(room, event string, args []json.RawMessage, attachments [][]byte) int {
	list := memberSlices.Get().(*[]*Conn)
	send := func(frames []*frame) {
		*list = n.members(room, (*list)[:0])
		for _, c := range *list {
			c.send(frames...)
		}
	}
	if n.rec != nil {
		var rooms []string
		if room != "" {
			rooms = []string{room}
		}
		n.rec.keep(n.name, rooms, nil, event, args, attachments, send)
	} else {
		send(encodeEvent(n.name, event, -1, args, attachments, true))
	}
	count := len(*list)
	clear(*list)
	memberSlices.Put(list)
	return count
}

// encodeEvent encodes an EVENT (or BINARY_EVENT), or with event "" an ACK
// (BINARY_ACK) of id, as frames: the packet, then its attachments.
func encodeEvent(nsp, event string, id int64, args []json.RawMessage, attachments [][]byte, shared bool) []*frame {
	typ := byte(sioEvent)
	switch {
	case event == "" && len(attachments) > 0:
		typ = sioBinaryAck
	case event == "":
		typ = sioAck
	case len(attachments) > 0:
		typ = sioBinaryEvent
	}
	var head []byte
	if event != "" {
		head = quote(event)
	}
	f := &frame{shared: shared}
	if shared {
		f.data = appendArray(appendHeader(nil, typ, len(attachments), nsp, id), head, args)
	} else {
		f.pooled = getBuffer()
		*f.pooled = appendArray(appendHeader(*f.pooled, typ, len(attachments), nsp, id), head, args)
		f.data = *f.pooled
	}
	frames := []*frame{f}
	for _, a := range attachments {
		frames = append(frames, &frame{data: a, binary: true, shared: shared})
	}
	return frames
}

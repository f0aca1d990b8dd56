package sioengine

import (
	"encoding/json"
	"slices"
)

// What a cluster adapter (servers/internal/cluster/sioredis) needs of a namespace
// besides Broadcast: the sockets of several rooms less those of others,
// as Node's adapter selects them for a broadcast or a request from
// another server.

// Select returns the namespace's sockets in any of rooms (every socket
// when rooms is empty) and in none of except, each once.
func (n *Namespace) Select(rooms, except []string) []*Socket {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []*Socket
	add := func(s *Socket) {
		for _, r := range except {
			if _, in := n.rooms[r][s]; in || r == s.id {
				return
			}
		}
		out = append(out, s)
	}
	if len(rooms) == 0 {
		for s := range n.sockets {
			add(s)
		}
		return out
	}
	seen := map[*Socket]struct{}{}
	once := func(s *Socket) {
		if _, dup := seen[s]; !dup {
			seen[s] = struct{}{}
			add(s)
		}
	}
	for _, r := range rooms {
		for s := range n.rooms[r] {
			once(s)
		}
		if s := n.ids[r]; s != nil { // the room of its id
			once(s)
		}
	}
	return out
}

// ownRoom is the socket whose own room (its id) room is, unless it also
// joined room by name (then it is a member already); nil if none. Under
// n.mu.
func (n *Namespace) ownRoom(room string) *Socket {
	s := n.ids[room]
	if s == nil {
		return nil
	}
	if _, in := n.rooms[room][s]; in {
		return nil
	}
	return s
}

// BroadcastTo sends an event to the sockets Select(rooms, except) picks
// and returns how many it went to: encoded once, as Broadcast does.
func (n *Namespace) BroadcastTo(rooms, except []string, event string, args []json.RawMessage, attachments [][]byte) int {
	var sockets []*Socket
	send := func(frames []*frame) {
		sockets = n.Select(rooms, except)
		for _, s := range sockets {
			s.conn.send(frames...)
		}
	}
	if n.rec != nil {
		n.rec.keep(n.name, rooms, except, event, args, attachments, send)
		return len(sockets)
	}
	if sockets = n.Select(rooms, except); len(sockets) == 0 {
		return 0
	}
	frames := encodeEvent(n.name, event, -1, args, attachments, true)
	for _, s := range sockets {
		s.conn.send(frames...)
	}
	return len(sockets)
}

// Rooms returns the names of the namespace's rooms, each socket's own
// (its id) included, as Node lists them.
func (n *Namespace) Rooms() []string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]string, 0, len(n.rooms)+len(n.ids))
	for r := range n.rooms {
		out = append(out, r)
	}
	for id := range n.ids {
		if _, joined := n.rooms[id]; !joined {
			out = append(out, id)
		}
	}
	return out
}

// Rooms returns the rooms the socket is in: its own (its id) first, as
// Node lists them, then those it joined.
func (s *Socket) Rooms() []string {
	s.nsp.mu.RLock()
	defer s.nsp.mu.RUnlock()
	out := append(make([]string, 0, 1+len(s.rooms)), s.id)
	for _, r := range s.rooms {
		if r != s.id {
			out = append(out, r)
		}
	}
	return out
}

// Leave takes the socket out of a room.
func (s *Socket) Leave(room string) {
	n := s.nsp
	n.mu.Lock()
	members := n.rooms[room]
	if _, in := members[s]; !in {
		n.mu.Unlock()
		return
	}
	delete(members, s)
	if len(members) == 0 {
		delete(n.rooms, room)
	}
	s.rooms = slices.DeleteFunc(s.rooms, func(r string) bool { return r == room })
	n.mu.Unlock()
	if h := s.conn.srv.opts.Hooks.Left; h != nil {
		h(s, room)
	}
}

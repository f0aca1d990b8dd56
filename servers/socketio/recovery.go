package socketio

import (
	"slices"
	"sync"

	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
	"github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// restoringAdapters builds the library's session-aware adapter, a port of
// Node's, with the gap of its restore closed.
//
// The gap: the library picks the packets a returning socket missed
// (RestoreSession), then builds the socket, which joins its rooms, and
// only then makes it a member of its namespace that a broadcast reaches.
// A broadcast in between is neither among the missed packets nor sent to
// the socket: it is lost, and seen as one push missed in a few hundred
// recoveries beside a CPU hog. Node restores a socket and makes it a
// member in one turn of its loop, so no broadcast comes between.
//
// Closed here: from RestoreSession until the socket's first join after
// it became a member (its own room, in the library's _onconnect), the
// socket's rooms are held back from the adapter and the broadcasts that
// would reach it are kept for it. That join, under the same lock as every
// broadcast, puts the socket in its rooms and writes what was kept before
// its CONNECT ack, as the library writes the missed packets: the client
// holds them until the ack, in order.
type restoringAdapters struct{}

func (restoringAdapters) New(nsp socket.Namespace) socket.Adapter {
	return &restoringAdapter{SessionAwareAdapter: socket.NewSessionAwareAdapter(nsp), nsp: nsp, restoring: map[socket.SocketId]*restoring{}}
}

// restoring is a socket between its restore and its membership.
type restoring struct {
	rooms []socket.Room    // its rooms, its own (id) included
	kept  []*parser.Packet // broadcasts that would have reached it
}

type restoringAdapter struct {
	socket.SessionAwareAdapter
	nsp socket.Namespace

	mu        sync.Mutex // held by every broadcast, restore and join
	restoring map[socket.SocketId]*restoring
}

func (a *restoringAdapter) RestoreSession(pid socket.PrivateSessionId, offset string) (*socket.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	session, err := a.SessionAwareAdapter.RestoreSession(pid, offset)
	if err == nil && session != nil {
		a.restoring[session.Sid] = &restoring{rooms: []socket.Room{socket.Room(session.Sid)}}
	}
	return session, err
}

func (a *restoringAdapter) Broadcast(packet *parser.Packet, opts *socket.BroadcastOptions) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.SessionAwareAdapter.Broadcast(packet, opts) // appends the offset
	for _, r := range a.restoring {
		if reaches(r.rooms, opts) {
			r.kept = append(r.kept, &parser.Packet{Type: packet.Type, Nsp: packet.Nsp, Data: packet.Data})
		}
	}
}

func (a *restoringAdapter) AddAll(id socket.SocketId, rooms *types.Set[socket.Room]) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.restoring[id]
	if r == nil {
		a.SessionAwareAdapter.AddAll(id, rooms)
		return
	}
	r.rooms = append(r.rooms, rooms.Keys()...)
	sock, member := a.nsp.Sockets().Load(id)
	if !member {
		return // the socket is being built: it joins its kept rooms
	}
	delete(a.restoring, id)
	a.SessionAwareAdapter.AddAll(id, types.NewSet(r.rooms...))
	for _, p := range r.kept {
		sock.Client().WriteToEngine(a.nsp.Server().Encoder().Encode(p), &socket.WriteOptions{})
	}
}

func (a *restoringAdapter) Del(id socket.SocketId, room socket.Room) {
	a.mu.Lock()
	if r := a.restoring[id]; r != nil {
		r.rooms = slices.DeleteFunc(r.rooms, func(in socket.Room) bool { return in == room })
	}
	a.mu.Unlock()
	a.SessionAwareAdapter.Del(id, room)
}

// DelAll: a socket that leaves everything before it became a member (its
// session closed meanwhile) is no longer being restored.
func (a *restoringAdapter) DelAll(id socket.SocketId) {
	a.mu.Lock()
	delete(a.restoring, id)
	a.mu.Unlock()
	a.SessionAwareAdapter.DelAll(id)
}

// SocketRooms: a socket being restored is in the rooms held back for it,
// which the library reads when it keeps a session that closes.
func (a *restoringAdapter) SocketRooms(id socket.SocketId) *types.Set[socket.Room] {
	a.mu.Lock()
	var rooms *types.Set[socket.Room]
	if r := a.restoring[id]; r != nil {
		rooms = types.NewSet(r.rooms...)
	}
	a.mu.Unlock()
	if rooms != nil {
		return rooms
	}
	return a.SessionAwareAdapter.SocketRooms(id)
}

// reaches is Node's shouldIncludePacket: a broadcast to opts reaches a
// socket in rooms.
func reaches(rooms []socket.Room, opts *socket.BroadcastOptions) bool {
	if opts == nil {
		return true
	}
	in := opts.Rooms == nil || opts.Rooms.Len() == 0
	for _, room := range rooms {
		if opts.Except != nil && opts.Except.Has(room) {
			return false
		}
		in = in || opts.Rooms.Has(room)
	}
	return in
}

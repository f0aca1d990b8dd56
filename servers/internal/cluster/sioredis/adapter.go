package sioredis

import (
	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
	"github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/knowngood/knowngood/shared/metrics"
)

// Builder makes the adapter of each namespace; give it to
// socket.ServerOptions.SetAdapter.
type Builder struct{ opts Options }

// NewBuilder returns a Builder whose adapters share opts.
func NewBuilder(opts Options) *Builder { return &Builder{opts: opts} }

// New makes the adapter of nsp. The library calls it, then Init.
func (b *Builder) New(nsp socket.Namespace) socket.Adapter {
	a := &Adapter{Adapter: socket.MakeAdapter()}
	a.Prototype(a)
	a.Construct(nsp)
	a.link = newLink(b.opts, nsp.Name(), zishangLocal{a})
	return a
}

// Adapter is one namespace's adapter on github.com/zishang520/socket.io:
// the library's in-memory adapter (rooms, delivery to this replica's
// sockets) plus the Redis side every engine shares (link.go), in the wire
// format of @socket.io/redis-adapter 8.3.0.
type Adapter struct {
	socket.Adapter // local rooms and delivery
	*link
}

// Init subscribes and starts the receiver and the publisher.
func (a *Adapter) Init() { a.init() }

// Close unsubscribes and stops the adapter's goroutines; what is still
// queued is dropped (the server is closing). The library calls it for
// each namespace when the server closes.
func (a *Adapter) Close() { a.close() }

// ServerCount is the number of servers subscribed to the namespace's
// request channel, this one included (1 when Redis does not answer).
func (a *Adapter) ServerCount() int64 { return a.serverCount() }

// Broadcast publishes the packet for the other servers (unless the
// broadcast is local) and delivers it to this replica's sockets.
func (a *Adapter) Broadcast(p *parser.Packet, opts *socket.BroadcastOptions) {
	if opts == nil || opts.Flags == nil || !opts.Flags.Local {
		a.publishPacket(p, opts)
	}
	a.Adapter.Broadcast(p, opts)
}

func (a *Adapter) publishPacket(p *parser.Packet, opts *socket.BroadcastOptions) {
	data, ok := p.Data.([]any)
	if !ok {
		a.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
		return
	}
	var rooms, except []string
	var flags map[string]any
	if opts != nil {
		rooms, except, flags = keys(opts.Rooms), keys(opts.Except), wireFlags(opts.Flags)
	}
	a.publishBroadcast(wirePacket{Type: int(p.Type), Data: data}, rooms, except, flags)
}

// wireFlags are the flags Node's adapter reads on the other side: only
// those set, as Node sends {} for a plain emit.
func wireFlags(f *socket.BroadcastFlags) map[string]any {
	m := map[string]any{}
	if f == nil {
		return m
	}
	if f.Volatile {
		m["volatile"] = true
	}
	if f.Compress != nil {
		m["compress"] = *f.Compress
	}
	if f.Broadcast {
		m["broadcast"] = true
	}
	return m
}

func keys(s *types.Set[socket.Room]) []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, s.Len())
	for _, r := range s.Keys() {
		out = append(out, string(r))
	}
	return out
}

func roomSet(rooms []string) *types.Set[socket.Room] {
	s := types.NewSet[socket.Room]()
	for _, r := range rooms {
		s.Add(socket.Room(r))
	}
	return s
}

func socketRooms(names []string) []socket.Room {
	out := make([]socket.Room, len(names))
	for i, n := range names {
		out[i] = socket.Room(n)
	}
	return out
}

// zishangLocal is the library's in-memory adapter as the link sees it.
type zishangLocal struct{ a *Adapter }

func (z zishangLocal) deliver(p wirePacket, rooms, except []string, flags map[string]any) int {
	opts := &socket.BroadcastOptions{Rooms: roomSet(rooms), Except: roomSet(except), Flags: &socket.BroadcastFlags{}}
	opts.Flags.Volatile, _ = flags["volatile"].(bool)
	if c, ok := flags["compress"].(bool); ok {
		opts.Flags.Compress = &c
	}
	z.a.Adapter.Broadcast(&parser.Packet{Type: parser.PacketType(p.Type), Nsp: p.Nsp, Data: p.Data}, opts)
	if z.a.opts.Delivered == nil {
		return 0
	}
	// The namespace's size for the common case; the matching sockets
	// counted one by one only for rooms or exceptions.
	if len(rooms) == 0 && len(except) == 0 {
		return z.a.Nsp().Sockets().Len()
	}
	return len(z.ids(rooms, except))
}

func (z zishangLocal) hasRoom(room string) bool {
	ids, ok := z.a.Rooms().Load(socket.Room(room))
	return ok && ids.Len() > 0
}

// ids are the ids of this replica's connected sockets in rooms (all of
// the namespace's when rooms is empty), except those in except.
func (z zishangLocal) ids(rooms, except []string) []string {
	var ids []string
	z.a.Adapter.FetchSockets(&socket.BroadcastOptions{Rooms: roomSet(rooms), Except: roomSet(except)})(
		func(s []socket.SocketDetails, _ error) {
			ids = make([]string, len(s))
			for i, sock := range s {
				ids[i] = string(sock.Id())
			}
		})
	return ids
}

func (z zishangLocal) allRooms() []string {
	var rooms []string
	z.a.Rooms().Range(func(r socket.Room, _ *types.Set[socket.SocketId]) bool {
		rooms = append(rooms, string(r))
		return true
	})
	return rooms
}

func (z zishangLocal) fetch(rooms, except []string) []fetchSocket {
	var sockets []fetchSocket
	z.a.Adapter.FetchSockets(&socket.BroadcastOptions{Rooms: roomSet(rooms), Except: roomSet(except)})(
		func(s []socket.SocketDetails, _ error) {
			for _, sock := range s {
				data := sock.Data()
				if data == nil {
					data = map[string]any{}
				}
				sockets = append(sockets, fetchSocket{ID: string(sock.Id()), Handshake: sock.Handshake(),
					Rooms: nonNil(keys(sock.Rooms())), Data: data})
			}
		})
	return sockets
}

func (z zishangLocal) apply(req request) {
	opts := &socket.BroadcastOptions{Rooms: roomSet(req.Opts.Rooms), Except: roomSet(req.Opts.Except)}
	switch req.Type {
	case typeRemoteJoin:
		z.a.Adapter.AddSockets(opts, socketRooms(req.Rooms))
	case typeRemoteLeave:
		z.a.Adapter.DelSockets(opts, socketRooms(req.Rooms))
	default:
		z.a.Adapter.DisconnectSockets(opts, req.Close)
	}
}

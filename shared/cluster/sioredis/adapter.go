package sioredis

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
	"github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/knowngood/knowngood/shared/cluster"
	"github.com/knowngood/knowngood/shared/metrics"
)

// CountTimeout bounds how long Count waits for the other servers' answers.
// Node's adapter waits 5 s (requestsTimeout); an ack that late would
// measure the cluster's slowest replica, not the target, so a load target
// waits one second and reports what it has.
const CountTimeout = time.Second

// Bounds on what a replica holds for the cluster.
const (
	// queueLen is the number of messages waiting to be published; a
	// broadcast that finds the queue full reached only this replica's
	// sockets and is counted as out/failed.
	queueLen = 4096
	// batchLen is the number of queued messages published in one
	// pipeline.
	batchLen = 64
	// maxPending is the number of counts waiting for answers at once;
	// beyond it a count reports this replica's sockets alone.
	maxPending = 1024
	// opTimeout bounds one Redis command of the adapter.
	opTimeout = 2 * time.Second
)

// Options are what every namespace's adapter shares.
type Options struct {
	Redis *cluster.Redis
	// Shards, when more than one, are the Redis servers that broadcasts
	// to one room are spread over by the room's hash (Redis is the first
	// of them): each server subscribes on every shard, and publishes a
	// room's broadcasts on its shard only, so that each Redis carries a
	// share of the rooms. Everything else (broadcasts to several rooms or
	// the namespace, counts, requests) stays on Redis.
	Shards  []*cluster.Redis
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// Delivered, when set, is told how many of this replica's sockets a
	// broadcast from another server was written to.
	Delivered func(n int)
}

// Builder makes the adapter of each namespace; give it to
// socket.ServerOptions.SetAdapter.
type Builder struct{ opts Options }

// NewBuilder returns a Builder whose adapters share opts.
func NewBuilder(opts Options) *Builder {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Builder{opts: opts}
}

// New makes the adapter of nsp. The library calls it, then Init.
func (b *Builder) New(nsp socket.Namespace) socket.Adapter {
	a := &Adapter{Adapter: socket.MakeAdapter(), opts: b.opts, uid: newUID(),
		out: make(chan outMsg, queueLen), pending: map[string]*countReq{}}
	a.Prototype(a)
	a.Construct(nsp)
	a.ch = channelsOf(nsp.Name(), a.uid)
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a
}

// Adapter is one namespace's adapter: the library's in-memory adapter
// (rooms, delivery to this replica's sockets) plus Redis pub/sub in the
// wire format of @socket.io/redis-adapter 8.3.0.
type Adapter struct {
	socket.Adapter // local rooms and delivery

	opts Options
	uid  string
	ch   channels

	ctx    context.Context
	cancel context.CancelFunc
	ps     []*redis.PubSub // one per shard; the first also has the requests
	out    chan outMsg
	wg     sync.WaitGroup
	once   sync.Once

	mu      sync.Mutex
	pending map[string]*countReq
}

// outMsg is one message to publish; broadcast ones are counted in
// knowngood_cluster_messages_total, the others (requests, responses) only
// when they fail, as op "request".
type outMsg struct {
	shard     int // index in shards()
	channel   string
	payload   []byte
	broadcast bool
}

// countReq gathers the answers to one count request.
type countReq struct{ answers chan int }

// UID is the adapter's name on the wire: a server drops the broadcasts
// that carry its own.
func (a *Adapter) UID() string { return a.uid }

// Init subscribes and starts the receiver and the publisher. Redis need
// not answer: go-redis subscribes again each time it reconnects.
func (a *Adapter) Init() {
	ctx, cancel := context.WithTimeout(a.ctx, opTimeout)
	for i, r := range a.shards() {
		ps := r.Client.Subscribe(a.ctx)
		a.ps = append(a.ps, ps)
		if i == 0 {
			if err := ps.Subscribe(ctx, a.ch.request, a.ch.response, a.ch.specific); err != nil {
				r.Fail(metrics.RedisReceive, err)
			}
		}
		if err := ps.PSubscribe(ctx, a.ch.broadcast+"*"); err != nil {
			r.Fail(metrics.RedisReceive, err)
		}
		msgs := ps.Channel(redis.WithChannelSize(queueLen))
		a.wg.Go(func() {
			for msg := range msgs {
				a.onMessage(msg.Channel, []byte(msg.Payload))
			}
		})
	}
	cancel()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.publisher()
	}()
}

// Close unsubscribes and stops the adapter's goroutines; what is still
// queued is dropped (the server is closing). The library calls it for
// each namespace when the server closes.
func (a *Adapter) Close() {
	a.once.Do(func() {
		a.cancel()
		for _, ps := range a.ps {
			_ = ps.Close()
		}
		a.wg.Wait()
	})
}

// ServerCount is the number of servers subscribed to the namespace's
// request channel, this one included (1 when Redis does not answer).
func (a *Adapter) ServerCount() int64 {
	ctx, cancel := context.WithTimeout(a.ctx, opTimeout)
	defer cancel()
	n, err := a.opts.Redis.Client.PubSubNumSub(ctx, a.ch.request).Result()
	if err != nil {
		a.opts.Redis.Fail(metrics.RedisCount, err)
		return 1
	}
	return max(n[a.ch.request], 1)
}

// Broadcast publishes the packet for the other servers (unless the
// broadcast is local) and delivers it to this replica's sockets.
func (a *Adapter) Broadcast(p *parser.Packet, opts *socket.BroadcastOptions) {
	if opts == nil || opts.Flags == nil || !opts.Flags.Local {
		a.publishBroadcast(p, opts)
	}
	a.Adapter.Broadcast(p, opts)
}

func (a *Adapter) publishBroadcast(p *parser.Packet, opts *socket.BroadcastOptions) {
	data, ok := p.Data.([]any)
	if !ok {
		a.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
		return
	}
	msg := broadcastMsg{UID: a.uid, Packet: wirePacket{Type: int(p.Type), Data: data, Nsp: a.Nsp().Name()}}
	var rooms []string
	if opts != nil {
		rooms = keys(opts.Rooms)
		msg.Opts.Rooms = anyRooms(rooms)
		msg.Opts.Except = anyRooms(keys(opts.Except))
		msg.Opts.Flags = wireFlags(opts.Flags)
	}
	b, err := encodeBroadcast(msg)
	if err != nil {
		a.opts.Log.Debug("sioredis: broadcast not encodable", "err", err)
		a.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
		return
	}
	a.enqueue(outMsg{shard: a.shardOf(rooms), channel: a.ch.broadcastChannel(rooms), payload: b, broadcast: true})
}

// shards are the Redis servers the broadcasts are spread over: Shards, or
// Redis alone.
func (a *Adapter) shards() []*cluster.Redis {
	if len(a.opts.Shards) > 1 {
		return a.opts.Shards
	}
	return []*cluster.Redis{a.opts.Redis}
}

// shardOf is the shard of a broadcast to rooms: for one room, its name's
// FNV-1a hash modulo the shards, so that every server picks the same;
// anything else goes to the first.
func (a *Adapter) shardOf(rooms []string) int {
	n := len(a.shards())
	if n == 1 || len(rooms) != 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(rooms[0]))
	return int(h.Sum32() % uint32(n))
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

// enqueue hands a message to the publisher, or counts it failed when the
// queue is full or the adapter closed.
func (a *Adapter) enqueue(m outMsg) {
	select {
	case a.out <- m:
		return
	case <-a.ctx.Done():
	default:
	}
	a.failed(m, nil)
}

func (a *Adapter) failed(m outMsg, err error) {
	op := metrics.RedisRequest
	if m.broadcast {
		op = metrics.RedisPublish
		a.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
	}
	if err != nil {
		a.shards()[m.shard].Fail(op, err)
	} else {
		a.opts.Metrics.RedisError(op)
	}
}

// publisher publishes the queue in order, up to batchLen messages per
// pipeline, until the adapter closes.
func (a *Adapter) publisher() {
	batch := make([]outMsg, 0, batchLen)
	for {
		select {
		case <-a.ctx.Done():
			return
		case m := <-a.out:
			batch = append(batch[:0], m)
		}
	fill:
		for len(batch) < batchLen {
			select {
			case m := <-a.out:
				batch = append(batch, m)
			default:
				break fill
			}
		}
		a.publish(batch)
	}
}

func (a *Adapter) publish(batch []outMsg) {
	ctx, cancel := context.WithTimeout(a.ctx, opTimeout)
	defer cancel()
	shards := a.shards()
	pipes := make([]redis.Pipeliner, len(shards))
	cmds := make([]*redis.IntCmd, len(batch))
	for i, m := range batch {
		if pipes[m.shard] == nil {
			pipes[m.shard] = shards[m.shard].Client.Pipeline()
		}
		cmds[i] = pipes[m.shard].Publish(ctx, m.channel, m.payload)
	}
	for _, p := range pipes {
		if p != nil {
			_, _ = p.Exec(ctx)
		}
	}
	ok := 0
	published := make([]bool, len(shards))
	for i, m := range batch {
		if err := cmds[i].Err(); err != nil {
			a.failed(m, err)
			continue
		}
		published[m.shard] = true
		if m.broadcast {
			ok++
		}
	}
	for i, p := range published {
		if p {
			shards[i].OK()
		}
	}
	a.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterOK, ok)
}

// onMessage handles one message of the adapter's channels.
func (a *Adapter) onMessage(channel string, payload []byte) {
	switch {
	case channel == a.ch.request:
		a.onRequest(payload)
	case channel == a.ch.response || channel == a.ch.specific:
		a.onResponse(payload)
	case strings.HasPrefix(channel, a.ch.broadcast):
		a.onBroadcast(channel, payload)
	}
}

// onBroadcast delivers another server's broadcast to this replica's
// sockets. A message on a room's channel is dropped unread when no socket
// here is in that room, as Node's adapter does.
func (a *Adapter) onBroadcast(channel string, payload []byte) {
	room := strings.TrimSuffix(channel[len(a.ch.broadcast):], "#")
	if room != "" && !a.hasRoom(room) {
		return
	}
	msg, err := decodeBroadcast(payload)
	if err != nil {
		a.opts.Metrics.Cluster(metrics.ClusterIn, metrics.ClusterFailed, 1)
		a.opts.Log.Debug("sioredis: broadcast not understood", "channel", channel, "err", err)
		return
	}
	if msg.UID == a.uid || msg.Packet.Nsp != a.Nsp().Name() {
		return
	}
	a.opts.Metrics.Cluster(metrics.ClusterIn, metrics.ClusterOK, 1)
	opts := &socket.BroadcastOptions{
		Rooms:  roomSet(roomNames(msg.Opts.Rooms)),
		Except: roomSet(roomNames(msg.Opts.Except)),
		Flags:  &socket.BroadcastFlags{},
	}
	opts.Flags.Volatile, _ = msg.Opts.Flags["volatile"].(bool)
	if c, ok := msg.Opts.Flags["compress"].(bool); ok {
		opts.Flags.Compress = &c
	}
	p := &parser.Packet{Type: parser.PacketType(msg.Packet.Type), Nsp: msg.Packet.Nsp, Data: msg.Packet.Data}
	a.Adapter.Broadcast(p, opts)
	if a.opts.Delivered != nil {
		// The namespace's size for the common case; the matching sockets
		// counted one by one only for rooms or exceptions.
		n := a.Nsp().Sockets().Len()
		if opts.Rooms.Len() > 0 || opts.Except.Len() > 0 {
			a.Adapter.FetchSockets(opts)(func(s []socket.SocketDetails, _ error) { n = len(s) })
		}
		a.opts.Delivered(n)
	}
}

func (a *Adapter) hasRoom(room string) bool {
	ids, ok := a.Rooms().Load(socket.Room(room))
	return ok && ids.Len() > 0
}

// localIDs are the ids of this replica's connected sockets in rooms (all
// of the namespace's when rooms is empty), except those in except.
func (a *Adapter) localIDs(rooms, except []string) []string {
	var ids []string
	a.Adapter.FetchSockets(&socket.BroadcastOptions{Rooms: roomSet(rooms), Except: roomSet(except)})(
		func(s []socket.SocketDetails, _ error) {
			ids = make([]string, len(s))
			for i, sock := range s {
				ids[i] = string(sock.Id())
			}
		})
	return ids
}

// onRequest answers another server's request. SOCKETS, ALL_ROOMS and
// REMOTE_FETCH get this replica's answer; REMOTE_JOIN, REMOTE_LEAVE and
// REMOTE_DISCONNECT act on its sockets. Server-side emits and broadcasts
// with acks are not served.
func (a *Adapter) onRequest(payload []byte) {
	req, ok := decodeRequest(payload)
	if !ok || req.UID == a.uid {
		return
	}
	var resp any
	switch req.Type {
	case typeSockets:
		resp = struct {
			RequestID string   `json:"requestId"`
			Sockets   []string `json:"sockets"`
		}{req.RequestID, nonNil(a.localIDs(req.Rooms, nil))}
	case typeAllRooms:
		rooms := []string{}
		a.Rooms().Range(func(r socket.Room, _ *types.Set[socket.SocketId]) bool {
			rooms = append(rooms, string(r))
			return true
		})
		resp = struct {
			RequestID string   `json:"requestId"`
			Rooms     []string `json:"rooms"`
		}{req.RequestID, rooms}
	case typeRemoteFetch:
		resp = a.fetchResponse(req)
	case typeRemoteJoin, typeRemoteLeave, typeRemoteDisconnect:
		if req.Opts == nil {
			return // the single-socket form, which Node's socket.io 4 no longer sends
		}
		opts := &socket.BroadcastOptions{Rooms: roomSet(req.Opts.Rooms), Except: roomSet(req.Opts.Except)}
		switch req.Type {
		case typeRemoteJoin:
			a.Adapter.AddSockets(opts, rooms(req.Rooms))
		case typeRemoteLeave:
			a.Adapter.DelSockets(opts, rooms(req.Rooms))
		default:
			a.Adapter.DisconnectSockets(opts, req.Close)
		}
		return
	default:
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return
	}
	a.enqueue(outMsg{channel: a.ch.response, payload: b})
}

func rooms(names []string) []socket.Room {
	out := make([]socket.Room, len(names))
	for i, n := range names {
		out[i] = socket.Room(n)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// fetchSocket is a socket as Node's fetchSockets() receives it.
type fetchSocket struct {
	ID        string            `json:"id"`
	Handshake *socket.Handshake `json:"handshake"`
	Rooms     []string          `json:"rooms"`
	Data      any               `json:"data"`
}

func (a *Adapter) fetchResponse(req request) any {
	opts := &socket.BroadcastOptions{Rooms: types.NewSet[socket.Room](), Except: types.NewSet[socket.Room]()}
	if req.Opts != nil {
		opts.Rooms, opts.Except = roomSet(req.Opts.Rooms), roomSet(req.Opts.Except)
	}
	sockets := []fetchSocket{}
	a.Adapter.FetchSockets(opts)(func(s []socket.SocketDetails, _ error) {
		for _, sock := range s {
			data := sock.Data()
			if data == nil {
				data = map[string]any{}
			}
			sockets = append(sockets, fetchSocket{ID: string(sock.Id()), Handshake: sock.Handshake(),
				Rooms: nonNil(keys(sock.Rooms())), Data: data})
		}
	})
	return struct {
		RequestID string        `json:"requestId"`
		Sockets   []fetchSocket `json:"sockets"`
	}{req.RequestID, sockets}
}

// onResponse hands an answer to the count waiting for it.
func (a *Adapter) onResponse(payload []byte) {
	if len(payload) == 0 || payload[0] != '{' {
		return // msgpack: an acknowledgement of a broadcast with acks
	}
	var resp response
	if json.Unmarshal(payload, &resp) != nil || resp.Sockets == nil {
		return
	}
	a.mu.Lock()
	req := a.pending[resp.RequestID]
	a.mu.Unlock()
	if req == nil {
		return
	}
	select {
	case req.answers <- len(resp.Sockets):
	default: // more answers than servers were counted: one joined meanwhile
	}
}

// CountResult is a cluster-wide count of sockets.
type CountResult struct {
	// Sockets is the sum of this replica's sockets and of every answer
	// received in time.
	Sockets int
	// Servers is the number of servers that answered, this one included;
	// Expected is the number subscribed to the request channel when the
	// count began (PUBSUB NUMSUB), at least 1. Servers < Expected means
	// some did not answer within CountTimeout and their sockets are not
	// in Sockets.
	Servers, Expected int
}

// Count counts the sockets in rooms (the namespace's, when rooms is
// empty) across the cluster, as Node's adapter does for fetchSockets():
// PUBSUB NUMSUB on the request channel says how many servers to wait for,
// a SOCKETS request asks them, and the answers are summed. It waits at
// most CountTimeout; when Redis does not answer it is this replica's
// count alone. An incomplete count is counted as
// knowngood_redis_errors_total{op="count"}.
func (a *Adapter) Count(rooms []string) CountResult {
	res := CountResult{Sockets: len(a.localIDs(rooms, nil)), Servers: 1, Expected: 1}
	ctx, cancel := context.WithTimeout(a.ctx, CountTimeout)
	defer cancel()
	n, err := a.opts.Redis.Client.PubSubNumSub(ctx, a.ch.request).Result()
	if err != nil {
		a.opts.Redis.Fail(metrics.RedisCount, err)
		return res
	}
	others := int(n[a.ch.request]) - 1
	if others <= 0 {
		return res
	}
	res.Expected += others
	req := &countReq{answers: make(chan int, others)}
	id := newUID()
	a.mu.Lock()
	if len(a.pending) >= maxPending {
		a.mu.Unlock()
		a.opts.Metrics.RedisError(metrics.RedisCount)
		return res
	}
	a.pending[id] = req
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.pending, id)
		a.mu.Unlock()
	}()
	b, _ := json.Marshal(request{UID: a.uid, RequestID: id, Type: typeSockets, Rooms: nonNil(rooms)})
	a.enqueue(outMsg{channel: a.ch.request, payload: b})
	for res.Servers < res.Expected {
		select {
		case k := <-req.answers:
			res.Sockets += k
			res.Servers++
		case <-ctx.Done():
			a.opts.Metrics.RedisError(metrics.RedisCount)
			return res
		}
	}
	return res
}

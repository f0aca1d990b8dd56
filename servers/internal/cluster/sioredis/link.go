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

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/shared/hops"
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
	// publishWait bounds how long a broadcast may take to be published:
	// one not published by then (Redis gone or stalled) is given up,
	// counted as out/failed, and stamped so that, were a stalled Redis to
	// run it later, every server drops it (expiresFlag) rather than
	// deliver it seconds late.
	publishWait = time.Second
)

// Options are what every namespace's adapter shares, on either engine.
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

// local is one namespace's sockets on this replica, on whichever engine:
// what the link delivers the other servers' broadcasts to and answers
// their requests from. Rooms and ids are strings as on the wire.
type local interface {
	// deliver writes a broadcast to the sockets in any of rooms (all
	// when empty) and in none of except, and returns how many.
	deliver(p wirePacket, rooms, except []string, flags map[string]any) int
	hasRoom(room string) bool
	ids(rooms, except []string) []string
	allRooms() []string
	fetch(rooms, except []string) []fetchSocket
	// apply acts on REMOTE_JOIN, REMOTE_LEAVE and REMOTE_DISCONNECT.
	apply(req request)
}

// link is one namespace's Redis side, shared by the engines' adapters:
// the subscriptions, the publisher and its queue, the shards, the
// requests of the other servers and the counts waiting for answers.
type link struct {
	opts  Options
	nsp   string
	uid   string
	ch    channels
	local local

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
// when they fail, as op "request". A broadcast's payload is its head
// (encodeHead); its options are appended when it is published, with its
// expiry.
type outMsg struct {
	shard     int // index in shards()
	channel   string
	payload   []byte
	broadcast bool
	opts      wireOpts  // a broadcast's
	at        time.Time // when a broadcast was made
}

// stamped is what m publishes when its publish is given up at deadline.
func (m outMsg) stamped(deadline time.Time) ([]byte, error) {
	if !m.broadcast {
		return m.payload, nil
	}
	flags := make(map[string]any, len(m.opts.Flags)+1)
	for k, v := range m.opts.Flags {
		flags[k] = v
	}
	flags[expiresFlag] = deadline.UnixMilli()
	o := m.opts
	o.Flags = flags
	return appendOpts(m.payload, o)
}

// countReq gathers the answers to one count request.
type countReq struct{ answers chan int }

func newLink(opts Options, nsp string, l local) *link {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	k := &link{opts: opts, nsp: nsp, uid: newUID(), local: l,
		out: make(chan outMsg, queueLen), pending: map[string]*countReq{}}
	k.ch = channelsOf(nsp, k.uid)
	k.ctx, k.cancel = context.WithCancel(context.Background())
	return k
}

// UID is the adapter's name on the wire: a server drops the broadcasts
// that carry its own.
func (k *link) UID() string { return k.uid }

// init subscribes and starts the receivers and the publisher. Redis need
// not answer: go-redis subscribes again each time it reconnects.
func (k *link) init() {
	ctx, cancel := context.WithTimeout(k.ctx, opTimeout)
	for i, r := range k.shards() {
		ps := r.Client.Subscribe(k.ctx)
		k.ps = append(k.ps, ps)
		if i == 0 {
			if err := ps.Subscribe(ctx, k.ch.request, k.ch.response, k.ch.specific); err != nil {
				r.Fail(metrics.RedisReceive, err)
			}
		}
		if err := ps.PSubscribe(ctx, k.ch.broadcast+"*"); err != nil {
			r.Fail(metrics.RedisReceive, err)
		}
		msgs := ps.Channel(redis.WithChannelSize(queueLen))
		k.wg.Go(func() {
			for msg := range msgs {
				k.onMessage(msg.Channel, []byte(msg.Payload))
			}
		})
	}
	cancel()
	k.wg.Go(k.publisher)
}

// close unsubscribes and stops the link's goroutines; what is still
// queued is dropped (the server is closing).
func (k *link) close() {
	k.once.Do(func() {
		k.cancel()
		for _, ps := range k.ps {
			_ = ps.Close()
		}
		k.wg.Wait()
	})
}

// serverCount is the number of servers subscribed to the namespace's
// request channel, this one included (1 when Redis does not answer).
func (k *link) serverCount() int64 {
	ctx, cancel := context.WithTimeout(k.ctx, opTimeout)
	defer cancel()
	n, err := k.opts.Redis.Client.PubSubNumSub(ctx, k.ch.request).Result()
	if err != nil {
		k.opts.Redis.Fail(metrics.RedisCount, err)
		return 1
	}
	return max(n[k.ch.request], 1)
}

// publishBroadcast encodes a broadcast of this replica's packet once and
// queues it on the channel and shard of its rooms; its options follow when
// it is published (stamped).
func (k *link) publishBroadcast(p wirePacket, rooms, except []string, flags map[string]any) {
	p.Nsp = k.nsp
	head, err := encodeHead(k.uid, p)
	if err != nil {
		k.opts.Log.Debug("sioredis: broadcast not encodable", "err", err)
		k.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
		return
	}
	k.enqueue(outMsg{shard: k.shardOf(rooms), channel: k.ch.broadcastChannel(rooms), payload: head, broadcast: true,
		opts: wireOpts{Rooms: anyRooms(rooms), Except: anyRooms(except), Flags: flags}, at: time.Now()})
}

// shards are the Redis servers the broadcasts are spread over: Shards, or
// Redis alone.
func (k *link) shards() []*cluster.Redis {
	if len(k.opts.Shards) > 1 {
		return k.opts.Shards
	}
	return []*cluster.Redis{k.opts.Redis}
}

// shardOf is the shard of a broadcast to rooms: for one room, its name's
// FNV-1a hash modulo the shards, so that every server picks the same;
// anything else goes to the first.
func (k *link) shardOf(rooms []string) int {
	n := len(k.shards())
	if n == 1 || len(rooms) != 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(rooms[0]))
	return int(h.Sum32() % uint32(n))
}

// enqueue hands a message to the publisher, or counts it failed when the
// queue is full or the link closed.
func (k *link) enqueue(m outMsg) {
	select {
	case k.out <- m:
		return
	case <-k.ctx.Done():
	default:
	}
	k.failed(m, nil)
}

func (k *link) failed(m outMsg, err error) {
	op := metrics.RedisRequest
	if m.broadcast {
		op = metrics.RedisPublish
		k.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
	}
	if err != nil {
		k.shards()[m.shard].Fail(op, err)
	} else {
		k.opts.Metrics.RedisError(op)
	}
}

// publisher publishes the queue in order, up to batchLen messages per
// pipeline, until the link closes.
func (k *link) publisher() {
	batch := make([]outMsg, 0, batchLen)
	for {
		select {
		case <-k.ctx.Done():
			return
		case m := <-k.out:
			batch = append(batch[:0], m)
		}
	fill:
		for len(batch) < batchLen {
			select {
			case m := <-k.out:
				batch = append(batch, m)
			default:
				break fill
			}
		}
		k.publish(batch)
	}
}

// publish sends a batch within opTimeout, publishWait when it holds a
// broadcast: a broadcast that waited publishWait in the queue is not
// sent, and those sent are stamped with the batch's deadline. So one is
// delivered within 2 x publishWait of being made, or never.
func (k *link) publish(batch []outMsg) {
	now := time.Now()
	deadline := now.Add(opTimeout)
	for _, m := range batch {
		if m.broadcast {
			deadline = now.Add(publishWait)
			break
		}
	}
	ctx, cancel := context.WithDeadline(k.ctx, deadline)
	defer cancel()
	shards := k.shards()
	pipes := make([]redis.Pipeliner, len(shards))
	cmds := make([]*redis.IntCmd, len(batch))
	for i, m := range batch {
		payload, err := m.stamped(deadline)
		if err == nil && m.broadcast && !now.Before(m.at.Add(publishWait)) {
			err = context.DeadlineExceeded
		}
		if err != nil {
			cmds[i] = redis.NewIntCmd(ctx)
			cmds[i].SetErr(err)
			continue
		}
		if pipes[m.shard] == nil {
			pipes[m.shard] = shards[m.shard].Client.Pipeline()
		}
		cmds[i] = pipes[m.shard].Publish(ctx, m.channel, payload)
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
			k.failed(m, err)
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
	k.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterOK, ok)
}

// onMessage handles one message of the link's channels.
func (k *link) onMessage(channel string, payload []byte) {
	switch {
	case channel == k.ch.request:
		k.onRequest(payload)
	case channel == k.ch.response || channel == k.ch.specific:
		k.onResponse(payload)
	case strings.HasPrefix(channel, k.ch.broadcast):
		k.onBroadcast(channel, payload)
	}
}

// onBroadcast delivers another server's broadcast to this replica's
// sockets. A message on a room's channel is dropped unread when no socket
// here is in that room, as Node's adapter does.
func (k *link) onBroadcast(channel string, payload []byte) {
	room := strings.TrimSuffix(channel[len(k.ch.broadcast):], "#")
	if room != "" && !k.local.hasRoom(room) {
		return
	}
	msg, err := decodeBroadcast(payload)
	if err != nil {
		k.opts.Metrics.Cluster(metrics.ClusterIn, metrics.ClusterFailed, 1)
		k.opts.Log.Debug("sioredis: broadcast not understood", "channel", channel, "err", err)
		return
	}
	if msg.UID == k.uid || msg.Packet.Nsp != k.nsp {
		return
	}
	if expiredFlag(msg.Opts.Flags) {
		// Its sender gave it up (counted out/failed there), and a
		// stalled Redis ran it late.
		k.opts.Metrics.Cluster(metrics.ClusterIn, metrics.ClusterExpired, 1)
		return
	}
	k.opts.Metrics.Cluster(metrics.ClusterIn, metrics.ClusterOK, 1)
	if data := msg.Packet.Data; len(data) > 1 {
		now := time.Now()
		for _, arg := range data[1:] { // after the event's name
			hops.Value(arg, hops.Delivered, now, k.opts.Metrics.Hop)
		}
	}
	n := k.local.deliver(msg.Packet, roomNames(msg.Opts.Rooms), roomNames(msg.Opts.Except), msg.Opts.Flags)
	if k.opts.Delivered != nil {
		k.opts.Delivered(n)
	}
}

// onRequest answers another server's request. SOCKETS, ALL_ROOMS and
// REMOTE_FETCH get this replica's answer; REMOTE_JOIN, REMOTE_LEAVE and
// REMOTE_DISCONNECT act on its sockets. Server-side emits and broadcasts
// with acks are not served.
func (k *link) onRequest(payload []byte) {
	req, ok := decodeRequest(payload)
	if !ok || req.UID == k.uid {
		return
	}
	var resp any
	switch req.Type {
	case typeSockets:
		resp = struct {
			RequestID string   `json:"requestId"`
			Sockets   []string `json:"sockets"`
		}{req.RequestID, nonNil(k.local.ids(req.Rooms, nil))}
	case typeAllRooms:
		resp = struct {
			RequestID string   `json:"requestId"`
			Rooms     []string `json:"rooms"`
		}{req.RequestID, nonNil(k.local.allRooms())}
	case typeRemoteFetch:
		var rooms, except []string
		if req.Opts != nil {
			rooms, except = req.Opts.Rooms, req.Opts.Except
		}
		sockets := k.local.fetch(rooms, except)
		if sockets == nil {
			sockets = []fetchSocket{}
		}
		resp = struct {
			RequestID string        `json:"requestId"`
			Sockets   []fetchSocket `json:"sockets"`
		}{req.RequestID, sockets}
	case typeRemoteJoin, typeRemoteLeave, typeRemoteDisconnect:
		if req.Opts != nil { // else the single-socket form, which Node's socket.io 4 no longer sends
			k.local.apply(req)
		}
		return
	default:
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return
	}
	k.enqueue(outMsg{channel: k.ch.response, payload: b})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// fetchSocket is a socket as Node's fetchSockets() receives it.
type fetchSocket struct {
	ID        string   `json:"id"`
	Handshake any      `json:"handshake"`
	Rooms     []string `json:"rooms"`
	Data      any      `json:"data"`
}

// onResponse hands an answer to the count waiting for it.
func (k *link) onResponse(payload []byte) {
	if len(payload) == 0 || payload[0] != '{' {
		return // msgpack: an acknowledgement of a broadcast with acks
	}
	var resp response
	if json.Unmarshal(payload, &resp) != nil || resp.Sockets == nil {
		return
	}
	k.mu.Lock()
	req := k.pending[resp.RequestID]
	k.mu.Unlock()
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
func (k *link) Count(rooms []string) CountResult {
	res := CountResult{Sockets: len(k.local.ids(rooms, nil)), Servers: 1, Expected: 1}
	ctx, cancel := context.WithTimeout(k.ctx, CountTimeout)
	defer cancel()
	n, err := k.opts.Redis.Client.PubSubNumSub(ctx, k.ch.request).Result()
	if err != nil {
		k.opts.Redis.Fail(metrics.RedisCount, err)
		return res
	}
	others := int(n[k.ch.request]) - 1
	if others <= 0 {
		return res
	}
	res.Expected += others
	req := &countReq{answers: make(chan int, others)}
	id := newUID()
	k.mu.Lock()
	if len(k.pending) >= maxPending {
		k.mu.Unlock()
		k.opts.Metrics.RedisError(metrics.RedisCount)
		return res
	}
	k.pending[id] = req
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		delete(k.pending, id)
		k.mu.Unlock()
	}()
	b, _ := json.Marshal(request{UID: k.uid, RequestID: id, Type: typeSockets, Rooms: nonNil(rooms)})
	k.enqueue(outMsg{channel: k.ch.request, payload: b})
	for res.Servers < res.Expected {
		select {
		case n := <-req.answers:
			res.Sockets += n
			res.Servers++
		case <-ctx.Done():
			k.opts.Metrics.RedisError(metrics.RedisCount)
			return res
		}
	}
	return res
}

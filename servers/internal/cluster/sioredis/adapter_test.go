package sioredis

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/zishang520/socket.io/servers/socket/v3"

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/metrics"
)

// These tests put one adapter on a real Redis and play the other server
// of the cluster by hand, on the wire a Node server uses (the
// servers/socketio cluster tests run a real Node server).

type fixture struct {
	srv   *clustertest.Redis
	m     *metrics.Metrics
	r     *cluster.Redis
	io    *socket.Server
	a     *Adapter
	peer  *redis.Client // the other server
	chans channels
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{srv: clustertest.StartRedis(t), m: metrics.New(prometheus.NewRegistry(), "empty")}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var err error
	if f.r, err = cluster.Dial(f.srv.URL, f.m, log); err != nil {
		t.Fatal(err)
	}
	opts := socket.DefaultServerOptions()
	opts.SetAdapter(NewBuilder(Options{Redis: f.r, Metrics: f.m, Log: log}))
	f.io = socket.NewServer(nil, opts)
	f.a = f.io.Of("/", nil).Adapter().(*Adapter)
	f.chans = channelsOf("/", "peer00")
	f.peer = redis.NewClient(&redis.Options{Addr: f.srv.Addr()})
	t.Cleanup(func() {
		f.io.Close(nil)
		_ = f.r.Close()
		_ = f.peer.Close()
	})
	f.waitNumSub(t, 1)
	return f
}

// waitNumSub waits until n servers listen on the request channel.
func (f *fixture) waitNumSub(t *testing.T, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, err := f.peer.PubSubNumSub(context.Background(), f.chans.request).Result()
		if err == nil && got[f.chans.request] == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers to %s after 10s (%v); want %d", got[f.chans.request], f.chans.request, err, n)
		}
	}
}

// subscribe makes the peer a server of the cluster (it counts in NUMSUB)
// and returns its messages.
func (f *fixture) subscribe(t *testing.T, channels ...string) <-chan *redis.Message {
	t.Helper()
	ps := f.peer.Subscribe(context.Background(), channels...)
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps.Channel()
}

func next(t *testing.T, ch <-chan *redis.Message) *redis.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
		return nil
	}
}

// TestBroadcastPublished: an emit on the namespace is published on the
// namespace's channel, and one to a single room on the room's, in the
// Node adapter's format with this adapter's uid.
func TestBroadcastPublished(t *testing.T) {
	t.Parallel() // a Redis of its own
	f := newFixture(t)
	msgs := f.subscribe(t, f.chans.broadcast, f.chans.broadcast+"r1#")
	_ = f.io.Emit("hello", "x", 1)
	m := next(t, msgs)
	got, err := decodeBroadcast([]byte(m.Payload))
	if err != nil {
		t.Fatal(err)
	}
	if m.Channel != f.chans.broadcast || got.UID != f.a.UID() || got.Packet.Nsp != "/" || len(got.Packet.Data) != 3 {
		t.Errorf("on %s: %+v", m.Channel, got)
	}
	_ = f.io.To("r1").Emit("hello")
	if m := next(t, msgs); m.Channel != f.chans.broadcast+"r1#" {
		t.Errorf("a one-room broadcast went to %s", m.Channel)
	}
	waitCount(t, f.m, "out", "ok", 2)
}

func waitCount(t *testing.T, m *metrics.Metrics, direction, result string, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); m.Snapshot().Cluster[direction][result] < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s/%s = %d after 5s; want %d", direction, result, m.Snapshot().Cluster[direction][result], n)
		}
	}
}

// TestCount: the count waits for the server NUMSUB reports besides this
// one and adds its answer; a server that does not answer is left out
// after CountTimeout, and counted.
func TestCount(t *testing.T) {
	t.Parallel() // a Redis of its own
	f := newFixture(t)
	reqs := f.subscribe(t, f.chans.request)
	f.waitNumSub(t, 2)

	done := make(chan CountResult, 1)
	go func() { done <- f.a.Count(nil) }()
	m := next(t, reqs)
	req, ok := decodeRequest([]byte(m.Payload))
	if !ok || req.Type != typeSockets || req.UID != f.a.UID() {
		t.Fatalf("request %q", m.Payload)
	}
	b, _ := json.Marshal(map[string]any{"requestId": req.RequestID, "sockets": []string{"a", "b", "c"}})
	f.peer.Publish(context.Background(), f.chans.response, b)
	if got := <-done; got != (CountResult{Sockets: 3, Servers: 2, Expected: 2}) {
		t.Errorf("count %+v; want 3 sockets from 2 of 2 servers", got)
	}

	start := time.Now()
	got := f.a.Count([]string{"r1"})
	if got != (CountResult{Sockets: 0, Servers: 1, Expected: 2}) || time.Since(start) < CountTimeout {
		t.Errorf("unanswered count %+v after %v; want 0 sockets from 1 of 2 servers after %v", got, time.Since(start), CountTimeout)
	}
	if n := f.m.Snapshot().RedisErrors[metrics.RedisCount]; n != 1 {
		t.Errorf("redis_errors{op=count} = %d; want 1", n)
	}
}

// TestAnswersRequests: the adapter answers a Node server's SOCKETS,
// ALL_ROOMS and REMOTE_FETCH requests on the response channel, and ignores
// its own.
func TestAnswersRequests(t *testing.T) {
	t.Parallel() // a Redis of its own
	f := newFixture(t)
	resps := f.subscribe(t, f.chans.response)
	for _, req := range []string{
		`{"uid":"peer00","requestId":"q1","type":0,"rooms":[]}`,
		`{"uid":"peer00","requestId":"q2","type":1}`,
		string(goldenFetch),
	} {
		f.peer.Publish(context.Background(), f.chans.request, req)
		var resp map[string]any
		if err := json.Unmarshal([]byte(next(t, resps).Payload), &resp); err != nil {
			t.Fatal(err)
		}
		if resp["requestId"] == nil || (resp["sockets"] == nil && resp["rooms"] == nil) {
			t.Errorf("answer to %s: %v", req, resp)
		}
	}
}

// TestResubscribes: after Redis restarts, the adapter subscribes again by
// itself, and publishing works again.
func TestResubscribes(t *testing.T) {
	t.Parallel() // a Redis of its own
	f := newFixture(t)
	f.srv.Stop()
	_ = f.io.Emit("lost")
	waitCount(t, f.m, "out", "failed", 1)
	f.srv.Start()
	f.waitNumSub(t, 1)
	msgs := f.subscribe(t, f.chans.broadcast)
	_ = f.io.Emit("again")
	if got, err := decodeBroadcast([]byte(next(t, msgs).Payload)); err != nil || got.Packet.Data[0] != "again" {
		t.Errorf("after the restart: %+v, %v", got, err)
	}
}

// TestShards: with two Redis servers, each one-room broadcast is published
// on the shard of its room's hash only, the rooms fall on both, a
// namespace-wide one goes to the first, and the adapter listens for
// broadcasts on both.
func TestShards(t *testing.T) {
	t.Parallel() // a Redis of its own
	m := metrics.New(prometheus.NewRegistry(), "empty")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var shards []*cluster.Redis
	var peers []*redis.Client
	for range 2 {
		srv := clustertest.StartRedis(t)
		r, err := cluster.Dial(srv.URL, m, log)
		if err != nil {
			t.Fatal(err)
		}
		peer := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = r.Close(); _ = peer.Close() })
		shards, peers = append(shards, r), append(peers, peer)
	}
	opts := socket.DefaultServerOptions()
	opts.SetAdapter(NewBuilder(Options{Redis: shards[0], Shards: shards, Metrics: m, Log: log}))
	server := socket.NewServer(nil, opts)
	t.Cleanup(func() { server.Close(nil) })
	a := server.Of("/", nil).Adapter().(*Adapter)
	ch := channelsOf("/", "peer00")
	var msgs []<-chan *redis.Message
	for i, p := range peers {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if n, err := p.PubSubNumPat(context.Background()).Result(); err == nil && n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the adapter does not listen for broadcasts on shard %d", i)
			}
		}
		ps := p.PSubscribe(context.Background(), ch.broadcast+"*")
		if _, err := ps.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		msgs = append(msgs, ps.Channel())
	}
	const rooms = 20
	on := [2]int{}
	for i := range rooms {
		room := fmt.Sprintf("room-%d", i)
		want := a.shardOf([]string{room})
		on[want]++
		_ = server.To(socket.Room(room)).Emit("tick", i)
		if m := next(t, msgs[want]); m.Channel != ch.broadcast+room+"#" {
			t.Fatalf("%s: got %s on shard %d", room, m.Channel, want)
		}
	}
	_ = server.Emit("all")
	if m := next(t, msgs[0]); m.Channel != ch.broadcast {
		t.Fatalf("a namespace-wide broadcast went to %s", m.Channel)
	}
	for i, c := range msgs {
		select {
		case m := <-c:
			t.Errorf("shard %d got %s besides its own", i, m.Channel)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if on[0] == 0 || on[1] == 0 {
		t.Errorf("%d rooms: %v on each shard; want both used", rooms, on)
	}
}

// TestStallNeverLate: a broadcast made while Redis is stalled (paused:
// what the adapter writes waits in Redis's socket buffer and runs when it
// resumes) is counted out/failed once publishWait has passed, and the
// message Redis publishes late carries its expiry, so that a server that
// gets it drops it as expired instead of delivering it seconds late.
func TestStallNeverLate(t *testing.T) {
	t.Parallel() // a Redis of its own
	f := newFixture(t)
	msgs := f.subscribe(t, f.chans.broadcast)
	// One that crosses first: the publisher's connection is up, so that
	// the stalled one is written to Redis rather than stuck in a dial.
	_ = f.io.Emit("warm")
	next(t, msgs)
	f.srv.Pause()
	_ = f.io.Emit("late")
	waitCount(t, f.m, "out", "failed", 1)
	f.srv.Resume()
	m := next(t, msgs)
	late, err := decodeBroadcast([]byte(m.Payload))
	if err != nil {
		t.Fatal(err)
	}
	if !expiredFlag(late.Opts.Flags) {
		t.Errorf("the broadcast Redis ran late carries flags %v: a server would deliver it", late.Opts.Flags)
	}

	// The same from another server, to this one: dropped, counted.
	late.UID = "peer00"
	late.Opts.Flags = map[string]any{expiresFlag: time.Now().Add(-time.Second).UnixMilli()}
	b, err := encodeBroadcast(late)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.peer.Publish(context.Background(), f.chans.broadcast, b).Err(); err != nil {
		t.Fatal(err)
	}
	waitCount(t, f.m, "in", "expired", 1)
	if n := f.m.Snapshot().Cluster["in"]["ok"]; n != 0 {
		t.Errorf("in/ok %d, want 0", n)
	}
}

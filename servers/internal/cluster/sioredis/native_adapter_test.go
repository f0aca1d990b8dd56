package sioredis

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	csocket "github.com/zishang520/socket.io/clients/socket/v3"

	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/sioengine"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/metrics"
)

// nativeFixture is a Native adapter on a real Redis, for a sioengine
// server with one real client in room r1; the test plays the other
// server by hand, as fixture does for the zishang520 Adapter.
type nativeFixture struct {
	fixture
	nsp       *sioengine.Namespace
	a         *Native
	client    *sioclient.Conn
	ticks     chan []any
	delivered chan int
}

func newNativeFixture(t *testing.T) *nativeFixture {
	t.Helper()
	f := &nativeFixture{ticks: make(chan []any, 8), delivered: make(chan int, 8)}
	f.srv, f.m = clustertest.StartRedis(t), metrics.New(prometheus.NewRegistry(), "empty")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var err error
	if f.r, err = cluster.Dial(f.srv.URL, f.m, log); err != nil {
		t.Fatal(err)
	}
	eng := sioengine.New(sioengine.Options{PingInterval: time.Second, PingTimeout: time.Second, ConnectTimeout: 2 * time.Second,
		MaxPayload: 1 << 20, Transports: []string{sioengine.WebSocket},
		Hooks: sioengine.Hooks{Connected: func(s *sioengine.Socket) { s.Join("r1") }}})
	ts := httptest.NewServer(eng)
	f.nsp = eng.Namespace("/")
	f.a = NewNative(Options{Redis: f.r, Metrics: f.m, Log: log, Delivered: func(n int) { f.delivered <- n }}, f.nsp)
	f.chans = channelsOf("/", "peer00")
	f.peer = redis.NewClient(&redis.Options{Addr: f.srv.Addr()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if f.client != nil {
			_ = f.client.Close()
		}
		eng.Close(ctx)
		ts.Close()
		f.a.Close()
		_ = f.r.Close()
		_ = f.peer.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.client, err = sioclient.Connect(ctx, sioclient.Options{URL: ts.URL, Transport: sioclient.WebSocket,
		OnSocket: func(s *csocket.Socket) {
			s.On("tick", func(args ...any) { f.ticks <- args })
		}})
	if err != nil {
		t.Fatal(err)
	}
	f.waitNumSub(t, 1)
	return f
}

// request publishes a request as the peer and returns the answer.
func (f *nativeFixture) request(t *testing.T, resps <-chan *redis.Message, req string) map[string]any {
	t.Helper()
	f.peer.Publish(context.Background(), f.chans.request, req)
	var resp map[string]any
	if err := json.Unmarshal([]byte(next(t, resps).Payload), &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestNativeAnswersRequests: the native adapter answers a Node server's
// SOCKETS, ALL_ROOMS and REMOTE_FETCH with its sockets and rooms, and
// acts on REMOTE_JOIN, REMOTE_LEAVE and REMOTE_DISCONNECT.
func TestNativeAnswersRequests(t *testing.T) {
	t.Parallel() // a Redis of its own
	f := newNativeFixture(t)
	resps := f.subscribe(t, f.chans.response)
	id := f.nsp.Select(nil, nil)[0].ID()
	if got := f.request(t, resps, `{"uid":"peer00","requestId":"q1","type":0,"rooms":["r1"]}`); !reflect.DeepEqual(got["sockets"], []any{id}) {
		t.Errorf("SOCKETS in r1: %v; want [%s]", got, id)
	}
	got := f.request(t, resps, `{"uid":"peer00","requestId":"q2","type":1}`)
	if rooms, _ := got["rooms"].([]any); len(rooms) != 2 || !slices.Contains(rooms, any("r1")) || !slices.Contains(rooms, any(id)) {
		t.Errorf("ALL_ROOMS: %v; want r1 and the socket's own, %s", got, id)
	}
	if got := f.request(t, resps, `{"uid":"peer00","requestId":"q3","type":0,"rooms":["`+id+`"]}`); !reflect.DeepEqual(got["sockets"], []any{id}) {
		t.Errorf("SOCKETS in the room of its id: %v; want [%s]", got, id)
	}
	got = f.request(t, resps, string(goldenFetch))
	if s, _ := got["sockets"].([]any); len(s) != 1 || s[0].(map[string]any)["id"] != id ||
		!reflect.DeepEqual(s[0].(map[string]any)["rooms"], []any{id, "r1"}) {
		t.Errorf("REMOTE_FETCH: %v; want socket %s", got, id)
	}
	f.peer.Publish(context.Background(), f.chans.request, `{"uid":"peer00","type":2,"opts":{"rooms":["r1"],"except":[]},"rooms":["r2"]}`)
	waitTrue(t, "REMOTE_JOIN r2", func() bool { return f.nsp.RoomLen("r2") == 1 })
	f.peer.Publish(context.Background(), f.chans.request, `{"uid":"peer00","type":3,"opts":{"rooms":[],"except":["r2"]},"rooms":["r1"]}`)
	f.peer.Publish(context.Background(), f.chans.request, `{"uid":"peer00","type":3,"opts":{"rooms":[],"except":[]},"rooms":["r1"]}`)
	waitTrue(t, "REMOTE_LEAVE r1", func() bool { return f.nsp.RoomLen("r1") == 0 })
	if rooms := f.nsp.Select(nil, nil)[0].Rooms(); !slices.Equal(rooms, []string{id, "r2"}) {
		t.Errorf("rooms %v after joining r2 and leaving r1", rooms)
	}
	f.peer.Publish(context.Background(), f.chans.request, `{"uid":"peer00","type":4,"opts":{"rooms":["r2"],"except":[]},"close":false}`)
	waitTrue(t, "REMOTE_DISCONNECT", func() bool { return f.nsp.Len() == 0 })
}

// TestNativeDelivers: a Node server's broadcast, binary included, reaches
// the native socket once, encoded as the client reads it; one for a room
// the socket is not in, or excepting its room, does not.
func TestNativeDelivers(t *testing.T) {
	t.Parallel() // a Redis of its own
	f := newNativeFixture(t)
	send := func(rooms, except []any) {
		b, err := encodeBroadcast(broadcastMsg{UID: "ZCx5Z0", Packet: wirePacket{Type: packetEvent, Nsp: "/",
			Data: []any{"tick", "hi", int8(1), map[string]any{"b": []byte{1, 2, 3}}}}, Opts: wireOpts{Rooms: rooms, Except: except}})
		if err != nil {
			t.Fatal(err)
		}
		f.peer.Publish(context.Background(), f.chans.broadcastChannel(roomNames(rooms)), b)
	}
	send(nil, []any{"r1"})
	send([]any{"elsewhere"}, nil)
	send([]any{"r1"}, nil)
	if n := <-f.delivered; n != 0 {
		t.Errorf("a broadcast excepting r1 reached %d sockets", n)
	}
	if n := <-f.delivered; n != 1 {
		t.Errorf("the broadcast to r1 reached %d sockets, want 1", n)
	}
	select {
	case args := <-f.ticks:
		if len(args) != 3 || args[0] != "hi" {
			t.Errorf("tick %v", args)
		}
		if b, ok := args[2].(map[string]any)["b"].(interface{ Bytes() []byte }); !ok || !slices.Equal(b.Bytes(), []byte{1, 2, 3}) {
			t.Errorf("the buffer came as %#v", args[2])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the broadcast to r1 did not reach the client")
	}
	select {
	case args := <-f.ticks:
		t.Errorf("a second tick %v", args)
	case <-time.After(100 * time.Millisecond):
	}
}

func waitTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

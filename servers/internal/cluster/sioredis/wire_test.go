package sioredis

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The zishang520 client (the native adapter's tests connect one)
	// starts a network monitor at init that it never stops, and runs each
	// one-shot timer on a goroutine of its own that ends when it fires.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/zishang520/socket.io/v3/pkg/utils.SetTimeout.func1"))
}

// Golden messages published by Node's @socket.io/redis-adapter 8.3.0
// (notepack.io 3.0.1) under socket.io 4.8.4, captured from Redis with a
// PSUBSCRIBE socket.io* client while scripts/node/sio-cluster-server.mjs
// served a socket.io-client 4.8.4 that sent
//
//	emit("broadcast", "hi", 1, 1.5, {a: [true, null]}, Buffer.from([1, 2, 3]))  -> nspAll on socket.io#/#
//	emit("broadcast-room", "r1", "x")                                            -> room on socket.io#/#r1#
//
// (io.emit and io.to("r1").emit on the server), and the JSON request and
// response of a fetchSockets() between two such servers.
var (
	goldenNspAll  = mustHex("93a65a4378355a3083a47479706502a46461746196a962726f616463617374a2686901cb3ff800000000000081a16192c3c0c403010203a36e7370a12f83a5726f6f6d7390a665786365707490a5666c61677380")
	goldenRoom    = mustHex("93a65a4378355a3083a47479706502a46461746192a962726f616463617374a178a36e7370a12f83a5726f6f6d7391a27231a665786365707490a5666c61677380")
	goldenFetch   = []byte(`{"uid":"ZCx5Z0","requestId":"TOvIZ4","type":5,"opts":{"rooms":[],"except":[]}}`)
	goldenFetched = []byte(`{"requestId":"TOvIZ4","sockets":[{"id":"8QYEGnjR-n3tY9EBAAAA","handshake":{"headers":{"host":"127.0.0.1:13998"},"time":"Wed Dec 02 2026 04:35:31 GMT+0000 (Coordinated Universal Time)","address":"127.0.0.1","xdomain":false,"secure":false,"issued":1796186131298,"url":"/socket.io/?EIO=4&transport=websocket","query":{"EIO":"4","transport":"websocket"},"auth":{}},"rooms":["8QYEGnjR-n3tY9EBAAAA"],"data":{}}]}`)
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// TestEncodeBroadcastMatchesNode: the arguments as the Go library hands
// them over (JSON numbers are float64) encode to Node's bytes exactly.
func TestEncodeBroadcastMatchesNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  broadcastMsg
		want []byte
	}{
		{"namespace", broadcastMsg{UID: "ZCx5Z0", Packet: wirePacket{Type: 2, Nsp: "/",
			Data: []any{"broadcast", "hi", float64(1), 1.5, map[string]any{"a": []any{true, nil}}, []byte{1, 2, 3}}}}, goldenNspAll},
		{"room", broadcastMsg{UID: "ZCx5Z0", Packet: wirePacket{Type: 2, Nsp: "/", Data: []any{"broadcast", "x"}},
			Opts: wireOpts{Rooms: []any{"r1"}}}, goldenRoom},
	} {
		got, err := encodeBroadcast(tc.msg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s:\n got %x\nwant %x", tc.name, got, tc.want)
		}
	}
}

func TestDecodeBroadcastFromNode(t *testing.T) {
	m, err := decodeBroadcast(goldenNspAll)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"broadcast", "hi", int8(1), 1.5, map[string]any{"a": []any{true, nil}}, []byte{1, 2, 3}}
	if m.UID != "ZCx5Z0" || m.Packet.Type != 2 || m.Packet.Nsp != "/" || !reflect.DeepEqual(m.Packet.Data, want) {
		t.Errorf("decoded %+v; want uid ZCx5Z0, type 2, nsp /, data %v", m, want)
	}
	if len(m.Opts.Rooms) != 0 || len(m.Opts.Except) != 0 || len(m.Opts.Flags) != 0 {
		t.Errorf("opts %+v; want empty", m.Opts)
	}
	m, err = decodeBroadcast(goldenRoom)
	if err != nil {
		t.Fatal(err)
	}
	if got := roomNames(m.Opts.Rooms); !reflect.DeepEqual(got, []string{"r1"}) {
		t.Errorf("rooms %v; want [r1]", got)
	}
	if _, err := decodeBroadcast([]byte{0x92, 0xa1, 'x', 0x80}); err == nil {
		t.Error("a two-element array decoded as a broadcast")
	}
}

func TestChannels(t *testing.T) {
	c := channelsOf("/custom", "abcdef")
	if c.broadcast != "socket.io#/custom#" || c.request != "socket.io-request#/custom#" ||
		c.response != "socket.io-response#/custom#" || c.specific != "socket.io-response#/custom#abcdef#" {
		t.Errorf("channels %+v", c)
	}
	if got := c.broadcastChannel([]string{"r1"}); got != "socket.io#/custom#r1#" {
		t.Errorf("one room: %s", got)
	}
	if got := c.broadcastChannel([]string{"r1", "r2"}); got != "socket.io#/custom#" {
		t.Errorf("two rooms: %s", got)
	}
}

func TestRequestsFromNode(t *testing.T) {
	r, ok := decodeRequest(goldenFetch)
	if !ok || r.UID != "ZCx5Z0" || r.RequestID != "TOvIZ4" || r.Type != typeRemoteFetch || r.Opts == nil {
		t.Fatalf("decoded %+v, %v", r, ok)
	}
	r, ok = decodeRequest([]byte(`{"uid":"u","requestId":"q","type":0,"rooms":["a",7]}`))
	if !ok || !reflect.DeepEqual(r.Rooms, []string{"a", "7"}) {
		t.Errorf("SOCKETS rooms %v, %v; want [a 7]", r.Rooms, ok)
	}
	var resp response
	if err := json.Unmarshal(goldenFetched, &resp); err != nil || resp.RequestID != "TOvIZ4" || len(resp.Sockets) != 1 {
		t.Errorf("Node's fetchSockets answer read as %+v, %v; want 1 socket for TOvIZ4", resp, err)
	}
	if _, ok := decodeRequest([]byte{0x85}); ok {
		t.Error("a msgpack request (a broadcast with acks) was taken")
	}
}

// TestUID: six characters of uid2's alphabet, different each time.
func TestUID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		u := newUID()
		if len(u) != uidLen || strings.Trim(u, uidAlphabet) != "" || seen[u] {
			t.Fatalf("uid %q (seen before: %v)", u, seen[u])
		}
		seen[u] = true
	}
}

package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/scripts/internal/benchrun/benchruntest"
)

func TestParseFlags(t *testing.T) {
	o := benchruntest.Flags(t, parseFlags, []string{"-subscribers", "2"}, []string{"-replicas", "1"}, []string{"-senders", "2000"}, []string{"-rate", "0"}, []string{"-duration", "0s"}, []string{"-parts", "nope"}, []string{"-variants", "echo-tcp"})
	if strings.Join(o.variants, ",") != benchrun.GnetBroadcast || strings.Join(o.parts, ",") != "push,sio,sio-single" || o.subscribers != 9000 || o.replicas != 3 {
		t.Errorf("defaults: %+v", o)
	}
}

func TestVersions(t *testing.T) {
	for log, want := range map[string]string{
		`{"msg":"listening","socketio":"4.8.1"}`:                           "socket.io 4.8.1",
		"x\n" + `{"msg":"listening","socketio":"4.8.1","adapter":"8.3.0"}`: "socket.io 4.8.1, redis-adapter 8.3.0",
		`{"msg":"listening","addr":"127.0.0.1:1"}`:                         "",
	} {
		if got := versions(log); got != want {
			t.Errorf("versions(%q) = %q, want %q", log, got, want)
		}
	}
}

func TestSioLabel(t *testing.T) {
	type label struct {
		part, setup string
		servers     int
		redis       bool
	}
	for setup, want := range map[int]label{
		sioKnowngoodRedis: {"Socket.IO room", "knowngood " + benchrun.SioBaseline + " x 2, Redis", 2, true},
		sioNodeRedis:      {"Socket.IO room", "Node socket.io x 2, redis-adapter", 2, true},
		sioBare:           {"Socket.IO room, 1 process", benchrun.SioFloor, 1, false},
		sioEmpty:          {"Socket.IO room, 1 process", "knowngood " + benchrun.SioBaseline, 1, false},
		sioNode:           {"Socket.IO room, 1 process", "Node socket.io", 1, false},
	} {
		r := &row{part: "Socket.IO room"}
		n, redis := sioLabel(r, setup)
		if got := (label{r.part, r.setup, n, redis}); got != want {
			t.Errorf("setup %d: %+v, want %+v", setup, got, want)
		}
	}
}

// TestWriteTable: a cluster at 1.2x the single process's CPU per delivery
// meets the goal; a lossy row does not; an error row keeps its place.
func TestWriteTable(t *testing.T) {
	single := &row{part: "push x", setup: "1 process", clients: 9, deliveries: 1000, window: 10, p50: 1, p99: 2, serverCPU: 1, redisCPU: -1}
	multi := &row{part: "push x", setup: "3 replicas x 3, Redis", clients: 9, deliveries: 1000, window: 10, p50: -1, p99: -1, serverCPU: 1.2, redisCPU: 0.5}
	multi.compare(single, "the 1 process's", true, pushGoal)
	node := &row{part: "sio", setup: "Node", clients: 4, deliveries: 100, window: 1, serverCPU: 1, redisCPU: -1}
	kg := &row{part: "sio", setup: "knowngood", clients: 4, deliveries: 300, lost: 2, window: 1, serverCPU: 1, redisCPU: -1}
	kg.compare(node, "Node's", false, sioGoal)
	failed := &row{part: "sio", setup: "broken", clients: 4, err: errors.New("no\nredis|here")}
	var b strings.Builder
	writeTable(&b, options{duration: time.Second, subscribers: 9, sockets: 4, senders: 1, rate: 1}, []*row{single, multi, kg, node, failed}, benchrun.StartMachine())
	out := b.String()
	for _, want := range []string{
		"| push x | 3 replicas x 3, Redis | 9 | 1000 | 0 | 100 | - | - | 1.20 | 0.50 | 0.00 | 1200.00 | 833 | 1.20x the 1 process's CPU per delivery | <= 1.3x the 1 process's | yes |",
		"| sio | knowngood | 4 | 300 | **2** | 300 | ",
		"3.00x Node's deliveries per CPU s | >= 2x Node's | **no** |",
		"| sio | broken | 4 | error: no redis/here |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

// loadgen's clients start package-level workers from init on.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

// TestSioWindowRead: the client's lines give the CPU mark at "start" and
// its result line, which fills the row.
func TestSioWindowRead(t *testing.T) {
	r := &row{p50: -1, p99: -1, redisCPU: -1}
	w := &sioWindow{r: r}
	lines := `{"msg":"listening"}
{"msg":"start"}
{"sockets":4,"connected":4,"sent":10,"expected":40,"received":39,"lost":1,"window_s":2,"p50_ms":1.5,"p99_ms":3,"client_cpu_s":0.25}
{"msg":"end"}
`
	_, _, last := w.read(t.Context(), strings.NewReader(lines))
	w.fill(last, 0.5, 0.1)
	if r.err != nil || r.deliveries != 39 || r.lost != 1 || r.window != 2 || r.p50 != 1.5 || r.p99 != 3 || r.serverCPU != 0.5 || r.redisCPU != -1 || r.clientCPU != 0.25 {
		t.Errorf("row %+v", r)
	}
	w.fill([]byte(`{"sockets":4,"connected":3}`), 0, 0)
	if r.err == nil || !strings.Contains(r.err.Error(), "3 of 4 sockets connected") {
		t.Errorf("a socket short: %v", r.err)
	}
	w.fill([]byte("oops"), 0, 0)
	if r.err == nil || !strings.Contains(r.err.Error(), "sio-room-load output") {
		t.Errorf("a bad line: %v", r.err)
	}
}

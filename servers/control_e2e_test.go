package servers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/protocol"
)

// stormRun is what scripts/clients/reconnect-storm.mjs prints.
type stormRun struct {
	Connected, Dropped, Reconnected int
	BackMs                          []int `json:"back_ms"`
	Error                           string
}

// runStorm connects n clients of kind to s, has the script drop them from
// the admin listener (with query on /control/drop), and returns what the
// script saw and what the target reports at /control/storm.
func runStorm(t *testing.T, s *server, kind string, n int, query string, extra ...string) (stormRun, protocol.Storm) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"../scripts/clients/reconnect-storm.mjs", "--url", s.url, "--drop", s.admin + "/control/drop" + query,
		"--client", kind, "--n", strconv.Itoa(n)}, extra...)
	out, err := exec.CommandContext(ctx, "node", args...).Output()
	var run stormRun
	if jerr := json.Unmarshal(out, &run); jerr != nil {
		t.Fatalf("reconnect-storm.mjs: %v, %v, %q", err, jerr, out)
	}
	if err != nil || run.Error != "" {
		t.Fatalf("reconnect-storm.mjs: %v: %+v", err, run)
	}
	res, err := http.Get(s.admin + "/control/storm")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var storm protocol.Storm
	if err := json.NewDecoder(res.Body).Decode(&storm); res.StatusCode != 200 || err != nil {
		t.Fatalf("/control/storm: %d %v", res.StatusCode, err)
	}
	t.Logf("%s: clients %+v; target: %s", kind, run, storm.Says)
	return run, storm
}

// TestDropStormSocketIO: the official socket.io-client, dropped from the
// admin listener (its sessions closed under it), comes back on its own with
// its jittered back-off; the target counts every one and calls the storm
// spread, on each engine.
func TestDropStormSocketIO(t *testing.T) { forWebSocketEngines(t, testDropStormSocketIO) }

func testDropStormSocketIO(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	const n = 20
	s := startServer(t, append(engineFlags(engine), "-variant", "empty")...)
	run, storm := runStorm(t, s, "socket.io", n, "")
	if run.Connected != n || run.Dropped != n || run.Reconnected != n {
		t.Errorf("clients saw %+v; want %d connected, dropped and back", run, n)
	}
	if storm.Dropped != n || storm.Reconnects < n || storm.Pattern != protocol.StormSpread {
		t.Errorf("target reported %+v; want %d dropped and back, spread", storm, n)
	}
	if d := s.stats(t).Controls["drop"]; d != 1 {
		t.Errorf("controls drop = %d, want 1", d)
	}
}

// TestDropDisconnectSocketIO: how=disconnect sends a Socket.IO DISCONNECT,
// after which socket.io-client stays away ("io server disconnect").
func TestDropDisconnectSocketIO(t *testing.T) { forWebSocketEngines(t, testDropDisconnectSocketIO) }

func testDropDisconnectSocketIO(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	const n = 5
	s := startServer(t, append(engineFlags(engine), "-variant", "empty")...)
	run, storm := runStorm(t, s, "socket.io", n, "?how=disconnect", "--expect-back", "0", "--wait-ms", "2500")
	if run.Connected != n || run.Dropped != n || run.Reconnected != 0 {
		t.Errorf("clients saw %+v; want %d connected and dropped, none back", run, n)
	}
	if storm.Dropped != n || storm.Reconnects != 0 || storm.Pattern != protocol.StormNone {
		t.Errorf("target reported %+v; want %d dropped, none back", storm, n)
	}
}

// TestDropStormWebSocket: Node ws clients that reconnect at once on every
// close are dropped (close 1012) on every WebSocket echo library and come
// back as a herd.
func TestDropStormWebSocket(t *testing.T) {
	t.Parallel()
	need(t, "ws (scripts/node_modules)", haveNodeClients())
	for _, v := range variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket)) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			const n = 10
			s := startServer(t, "-variant", v.Name)
			run, storm := runStorm(t, s, "ws", n, "?code=1012")
			if run.Connected != n || run.Dropped != n || run.Reconnected != n {
				t.Errorf("clients saw %+v; want %d connected, dropped and back", run, n)
			}
			if storm.Dropped != n || storm.Reconnects < n || storm.Pattern != protocol.StormHerd {
				t.Errorf("target reported %+v; want %d dropped and back, a herd", storm, n)
			}
			if d := s.stats(t).Disconnects["1012"]; d != n {
				t.Errorf("disconnects 1012 = %d, want %d", d, n)
			}
		})
	}
}

// postControl posts an order to s's admin listener and returns the answer.
func postControl(t *testing.T, s *server, path string) string {
	t.Helper()
	res, err := http.Post(s.admin+path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", path, res.StatusCode, body)
	}
	return string(body)
}

// TestPushControlBroadcast: a broadcast target started without a push
// pushes once told to (numbered from 1, at the interval and size asked),
// and stops when told.
func TestPushControlBroadcast(t *testing.T) {
	t.Parallel()
	s := startServer(t, "-variant", "broadcast-gnet")
	c, _, err := websocket.DefaultDialer.Dial("ws://"+strings.TrimPrefix(s.url, "http://")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	postControl(t, s, "/control/push?state=on&interval=20ms&size=7")
	for want := uint64(1); want <= 3; want++ {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, msg, err := c.ReadMessage()
		var p struct {
			Type    string
			Seq     uint64
			Payload string
		}
		if err != nil || json.Unmarshal(msg, &p) != nil || p.Type != "push" || p.Seq != want || len(p.Payload) != 7 {
			t.Fatalf("read %q, %v; want push %d with 7 bytes", msg, err, want)
		}
	}
	postControl(t, s, "/control/push?state=off")
	// The pushes sent before the order may still be on their way; after
	// them, nothing for 25 intervals.
	for late := 0; ; late++ {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, _, err := c.ReadMessage(); err != nil {
			break
		}
		if late == 50 {
			t.Fatal("50 pushes after the push was stopped: it did not stop")
		}
	}
	if d := s.stats(t).Controls["push"]; d != 2 {
		t.Errorf("controls push = %d, want 2", d)
	}
}

// TestPushControlSocketIO: a Socket.IO target started without a push
// pushes to socket.io-client once told to, every push in order, and
// stops when told, on each engine.
func TestPushControlSocketIO(t *testing.T) { forWebSocketEngines(t, testPushControlSocketIO) }

func testPushControlSocketIO(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	s := startServer(t, append(engineFlags(engine), "-variant", "empty")...)
	listen := func() (received, missed int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "node", "../scripts/clients/sio-push.mjs", "--url", s.url, "--n", "3", "--duration-ms", "600").Output()
		var r struct{ Connected, Received, Missed int }
		if err != nil || json.Unmarshal(out, &r) != nil || r.Connected != 3 {
			t.Fatalf("sio-push.mjs: %v, %q", err, out)
		}
		return r.Received, r.Missed
	}
	postControl(t, s, "/control/push?state=on&interval=20ms")
	if received, missed := listen(); received == 0 || missed != 0 {
		t.Errorf("with the push on: %d received, %d missed; want some, none missed", received, missed)
	}
	postControl(t, s, "/control/push?state=off")
	if received, _ := listen(); received != 0 {
		t.Errorf("with the push off: %d received, want none", received)
	}
}

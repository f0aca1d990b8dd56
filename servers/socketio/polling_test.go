package socketio_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// The Engine.IO cases of the socket.io-protocol suite over HTTP long-polling
// and the upgrade, with the suite's settings (suiteConfig).

func pollURL(tg *target, sid string) string {
	return tg.url + "/socket.io/?EIO=4&transport=polling&sid=" + sid
}

// pollingSession opens a polling session and returns its sid.
func pollingSession(t *testing.T, tg *target) string {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, tg.url+"/socket.io/?EIO=4&transport=polling", "")
	if code != 200 || !strings.HasPrefix(body, `0{`) {
		t.Fatalf("open: %d %q", code, body)
	}
	i := strings.Index(body, `"sid":"`)
	if i < 0 {
		t.Fatalf("open without sid: %q", body)
	}
	sid := body[i+len(`"sid":"`):]
	return sid[:strings.IndexByte(sid, '"')]
}

func httpDo(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPollingHeartbeat(t *testing.T) { forEngines(t, testPollingHeartbeat) }

func testPollingHeartbeat(t *testing.T, engine string) {
	// A longer connect timeout than the suite's: the Engine.IO session here never joins
	// a namespace, and a polling session the server closes while no GET is
	// pending keeps the library's 30 s orderly-close timer (as Node's
	// engine.io does), which goleak would take for a leak.
	// And a longer ping timeout, so that a slow round trip on a busy
	// machine is not taken for a dead client.
	tg := start(t, engine, socketio.Empty, func(c *config.Config) {
		suiteConfig(c)
		c.SocketIO.ConnectTimeout = time.Minute
		c.PingTimeout = 5 * time.Second
	})
	sid := pollingSession(t, tg)
	for range 3 {
		// The server pings after pingInterval; the client answers with a pong.
		if code, body := httpDo(t, http.MethodGet, pollURL(tg, sid), ""); code != 200 || body != "2" {
			t.Fatalf("poll: %d %q, want a ping", code, body)
		}
		if code, body := httpDo(t, http.MethodPost, pollURL(tg, sid), "3"); code != 200 || body != "ok" {
			t.Fatalf("pong: %d %q", code, body)
		}
	}

	// The suite's next case, a session that stops answering is closed after
	// pingInterval + pingTimeout, is checked over WebSocket
	// (TestWireHeartbeat), and over polling on the native engine
	// (TestPollingPingTimeout): there the library keeps its 30 s
	// orderly-close timer, which goleak would take for a leak.
}

// TestPollingPingTimeout is the suite's case: a polling session whose
// client sleeps pingInterval + pingTimeout after the open finds it closed,
// 400. Its GET arrives after the ping timeout was due, by the client's own
// round trip at most: on a loaded machine the server's timer may not have
// run yet, and the native engine answers as Node's engine.io (whose
// timers run on time) all the same.
func TestPollingPingTimeout(t *testing.T) {
	t.Parallel()
	tg := start(t, config.EngineNative, socketio.Empty, suiteConfig)
	for range 5 {
		sid := pollingSession(t, tg)
		time.Sleep(300*time.Millisecond + 200*time.Millisecond) // the suite's sleep
		if code, body := httpDo(t, http.MethodGet, pollURL(tg, sid), ""); code != 400 || body != `{"code":1,"message":"Session ID unknown"}` {
			t.Fatalf("poll after pingInterval + pingTimeout: %d %q, want 400", code, body)
		}
	}
	waitFor(t, "disconnects{ping timeout} = 5", func() bool { return tg.metrics.Snapshot().Disconnects["ping timeout"] == 5 })
}

func TestPollingUpgrade(t *testing.T) { forEngines(t, testPollingUpgrade) }

func testPollingUpgrade(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, suiteConfig)
	upgrade := func(sid string) *websocket.Conn {
		t.Helper()
		conn, _, err := websocket.DefaultDialer.Dial(strings.Replace(wsURL(tg.url), "transport=websocket", "transport=websocket&sid="+sid, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	sid := pollingSession(t, tg)
	conn := upgrade(sid)
	send(t, conn, "2probe")
	if got := readText(t, conn); got != "3probe" {
		t.Errorf("probe answer %q, want 3probe", got)
	}
	send(t, conn, "5")

	// After the upgrade, the same sid over polling is refused...
	sid = pollingSession(t, tg)
	conn = upgrade(sid)
	send(t, conn, "2probe")
	readText(t, conn)
	send(t, conn, "5")
	// The upgrade was sent first: the GET waits for it (TestUpgradeRace).
	if code, _ := httpDo(t, http.MethodGet, pollURL(tg, sid), ""); code != http.StatusBadRequest {
		t.Errorf("poll after the upgrade: %d, want 400", code)
	}
	// ... and so is a second WebSocket with it.
	second, _, err := websocket.DefaultDialer.Dial(strings.Replace(wsURL(tg.url), "transport=websocket", "transport=websocket&sid="+sid, 1), nil)
	if err == nil {
		defer second.Close()
		waitClosed(t, second)
	}
}

// TestConnectTimeoutAnyTransport: socket.io's connect timeout closes a
// session that has joined no namespace whatever its transport, and each
// counts as failed (the server gave up): over WebSocket at once, over
// polling with a GET pending at once (it gets the close packet), and over
// polling with none pending when the close can go out, here by ping
// timeout since the client never polls again (as in Node).
func TestConnectTimeoutAnyTransport(t *testing.T) { forEngines(t, testConnectTimeoutAnyTransport) }

func testConnectTimeoutAnyTransport(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) {
		suiteConfig(c)
		c.SocketIO.ConnectTimeout = 200 * time.Millisecond // before the first ping (300 ms)
	})
	t.Cleanup(func() {
		if t.Failed() {
			st := tg.metrics.Snapshot()
			t.Logf("handshakes %v, disconnects %v", st.Handshakes, st.Disconnects)
		}
	})
	ws, _ := rawOpen(t, tg)
	pending := pollingSession(t, tg)
	idle := pollingSession(t, tg)
	if code, body := httpDo(t, http.MethodGet, pollURL(tg, pending), ""); code != 200 || body != "1" {
		t.Errorf("GET pending at the connect timeout: %d %q, want the close packet (1)", code, body)
	}
	waitClosed(t, ws)
	want := map[string]uint64{protocol.ResultFailed: 3, protocol.ResultAbandoned: 0}
	waitFor(t, fmt.Sprintf("handshakes %v", want), func() bool { return equalCounts(tg.metrics.Snapshot().Handshakes, want) })
	if code, _ := httpDo(t, http.MethodGet, pollURL(tg, idle), ""); code != http.StatusBadRequest {
		t.Errorf("GET after the connect timeout closed the session: %d, want 400", code)
	}
}

// TestPollingMalformedPacket: a POST with a packet that is not Socket.IO
// closes the session (as over WebSocket) and is answered 400, not the
// library's 429 Too Many Requests.
func TestPollingMalformedPacket(t *testing.T) { forEngines(t, testPollingMalformedPacket) }

func testPollingMalformedPacket(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, suiteConfig)
	sid := pollingSession(t, tg)
	if code, _ := httpDo(t, http.MethodPost, pollURL(tg, sid), "4abc"); code != http.StatusBadRequest {
		t.Errorf("malformed packet: %d, want 400", code)
	}
	waitFor(t, "one failed handshake", func() bool { return tg.metrics.Snapshot().Handshakes[protocol.ResultFailed] == 1 })
	if code, _ := httpDo(t, http.MethodGet, pollURL(tg, sid), ""); code != http.StatusBadRequest {
		t.Errorf("GET after the malformed packet: %d, want 400", code)
	}
}

// TestVanishedPollingClients: polling clients that leave right after the
// handshake, and never send another request, are all closed and counted
// (connections_active back to 0, a disconnect each), with the connect
// timeout due together with the ping timeout, as the defaults are
// (25 s + 20 s and 45 s), where the two timers run in either order.
func TestVanishedPollingClients(t *testing.T) { forEngines(t, testVanishedPollingClients) }

func testVanishedPollingClients(t *testing.T, engine string) {
	const sessions = 30
	tg := start(t, engine, socketio.Empty, func(c *config.Config) {
		c.PingInterval, c.PingTimeout, c.SocketIO.ConnectTimeout = 100*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond
	})
	for range sessions {
		pollingSession(t, tg)
	}
	waitFor(t, "every session closed and counted", func() bool {
		s := tg.metrics.Snapshot()
		var gone uint64
		for _, n := range s.Disconnects {
			gone += n
		}
		return s.ConnectionsActive == 0 && gone == sessions
	})
}

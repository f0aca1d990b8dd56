package socketio_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Requests that race on the wire: the client sends one before the other,
// on different connections, and the answer must be the one Node's
// engine.io gives every time. Each test repeats its sequence so that
// `go test -count=N -run TestX` beside a CPU hog is a meaningful check.

const raceRounds = 20

// raceConfig is the suite's, without its short timers: a ping (every
// 300 ms there) or the connect timeout (1 s) firing within a round, as
// they can when a loaded machine stretches it, would answer a request
// first, and that is not the race a test checks.
func raceConfig(c *config.Config) {
	suiteConfig(c)
	c.PingInterval, c.PingTimeout = 25*time.Second, 20*time.Second
	c.SocketIO.ConnectTimeout = 45 * time.Second
}

// rawHTTP is one keep-alive HTTP/1.1 connection that writes requests byte
// for byte, so that a test decides exactly when each one leaves.
type rawHTTP struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, tg *target) *rawHTTP {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(tg.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawHTTP{conn: conn, r: bufio.NewReader(conn)}
}

// send writes a request; its answer is read with response.
func (c *rawHTTP) send(t *testing.T, method, target, body string) {
	t.Helper()
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain;charset=UTF-8\r\nContent-Length: %d\r\n\r\n%s",
		method, target, len(body), body)
	if _, err := io.WriteString(c.conn, req); err != nil {
		t.Fatal(err)
	}
}

func (c *rawHTTP) response(t *testing.T) (int, string) {
	t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading a response body: %v", err)
	}
	return resp.StatusCode, string(body)
}

// TestPollingCloseRace is the suite's "should forcefully close the
// session": a long-poll GET, then, without waiting for it, a POST with a
// close packet. Node answers the GET 200 with a noop (its polling
// transport's onClose writes one to the pending request), the POST "ok",
// and any GET after that 400.
//
// This test and TestUpgradeRace run alone: they are short, and what they
// check is an order on the wire that load elsewhere could only blur.
func TestPollingCloseRace(t *testing.T) { inTurn(t, engines, testPollingCloseRace) }

func testPollingCloseRace(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, raceConfig)
	for round := range raceRounds {
		sid := pollingSession(t, tg)
		// Both connections are open before either request is written: the
		// GET leaves first, the POST right after it.
		poll, post := dialRaw(t, tg), dialRaw(t, tg)
		path := "/socket.io/?EIO=4&transport=polling&sid=" + sid
		poll.send(t, http.MethodGet, path, "")
		post.send(t, http.MethodPost, path, "1")
		if code, body := post.response(t); code != 200 || body != "ok" {
			t.Errorf("round %d: POST close: %d %q, want 200 ok", round, code, body)
		}
		if code, body := poll.response(t); code != 200 || body != "6" {
			t.Fatalf("round %d: the GET sent before the close: %d %q, want 200 and a noop (6)", round, code, body)
		}
		poll.send(t, http.MethodGet, path, "")
		if code, _ := poll.response(t); code != http.StatusBadRequest {
			t.Fatalf("round %d: GET after the close: %d, want 400", round, code)
		}
		poll.conn.Close()
		post.conn.Close()
	}
}

// TestUpgradeRace is the suite's "should ignore HTTP requests with same
// sid after upgrade": over the WebSocket of an upgrade, 2probe and 5 (the
// upgrade) without waiting for the 3probe, then a polling GET. The client
// sent the upgrade first, so Node (which reads both in arrival order)
// answers the GET 400 ("Bad request": the session is on WebSocket now).
func TestUpgradeRace(t *testing.T) { inTurn(t, engines, testUpgradeRace) }

func testUpgradeRace(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, raceConfig)
	for round := range raceRounds {
		sid := pollingSession(t, tg)
		poll := dialRaw(t, tg)
		ws, _, err := websocket.DefaultDialer.Dial(strings.Replace(wsURL(tg.url), "transport=websocket", "transport=websocket&sid="+sid, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		send(t, ws, "2probe")
		send(t, ws, "5")
		poll.send(t, http.MethodGet, "/socket.io/?EIO=4&transport=polling&sid="+sid, "")
		code, body := poll.response(t)
		if code != http.StatusBadRequest || !strings.Contains(body, `"code":3`) {
			t.Fatalf("round %d: GET after the upgrade: %d %q, want 400 with code 3", round, code, body)
		}
		if got := readText(t, ws); got != "3probe" {
			t.Errorf("round %d: probe answer %q, want 3probe", round, got)
		}
		ws.Close()
		poll.conn.Close()
	}
}

// TestHeartbeatRace is the suite's "should send ping/pong packets" over
// WebSocket, for sessions that never join a namespace: pings, each
// answered at once, come before the connect timeout (1 s against pings at
// 300, 600 and 900 ms), which then ends the session with a close frame
// (Node's ws sends one without a status code: 1005 at the client). A pong
// the server handled before arming its ping timeout used to close the
// session with "ping timeout" a ping later.
func TestHeartbeatRace(t *testing.T) { forEngines(t, testHeartbeatRace) }

func testHeartbeatRace(t *testing.T, engine string) {
	const sessions = 10
	tg := start(t, engine, socketio.Async, suiteConfig)
	errs := make(chan error, sessions)
	for range sessions {
		conn, _ := rawOpen(t, tg)
		go func() { errs <- pingPongThenClose(conn) }()
	}
	for range sessions {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	want := map[string]uint64{protocol.ResultFailed: sessions}
	t.Cleanup(func() {
		if t.Failed() {
			st := tg.metrics.Snapshot()
			t.Logf("handshakes %v, disconnects %v", st.Handshakes, st.Disconnects)
		}
	})
	waitFor(t, fmt.Sprintf("handshakes %v", want), func() bool { return equalCounts(tg.metrics.Snapshot().Handshakes, want) })
	if got := tg.metrics.Snapshot().Disconnects; got["forced close"] != sessions {
		t.Errorf("disconnects %v, want %d forced close (the connect timeout)", got, sessions)
	}
}

// pingPongThenClose answers every ping at once until the server closes,
// and says what differed from that. Three pings fit before the connect
// timeout on an idle machine; on a loaded one each round trip pushes the
// next ping later, so at least one is asked for: the race showed as a
// "ping timeout" close one ping after a pong, which the caller's count of
// disconnect reasons catches.
func pingPongThenClose(conn *websocket.Conn) error {
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	pings := 0
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNoStatusReceived) {
				return fmt.Errorf("after %d pings: %v; want a close frame without a status (1005)", pings, err)
			}
			if pings == 0 {
				return errors.New("closed before the first ping")
			}
			return nil
		}
		if string(data) != "2" || pings == 3 {
			return fmt.Errorf("ping %d: %q; want at most three pings (\"2\") before the close", pings+1, data)
		}
		pings++
		if err := conn.WriteMessage(websocket.TextMessage, []byte("3")); err != nil {
			return err
		}
	}
}

package socketio_test

import (
	"encoding/json"
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

// These tests speak Engine.IO v4 / Socket.IO v5 on the wire, as the official
// socket.io-protocol test suite does, against the settings that suite is
// written for. They check the packets byte for byte; the real clients are
// tested elsewhere.

func suiteConfig(c *config.Config) {
	c.PingInterval = 300 * time.Millisecond
	c.PingTimeout = 200 * time.Millisecond
	c.SocketIO.MaxPayload = 1_000_000
	c.SocketIO.ConnectTimeout = time.Second
	c.SocketIO.EmitAuth = true
	// The suite's reference server has "/" and "/custom" only: a CONNECT
	// to another namespace gets "Invalid namespace".
	c.SocketIO.Namespaces = []string{"/custom"}
}

func wsURL(httpURL string) string {
	return "ws" + strings.TrimPrefix(httpURL, "http") + "/socket.io/?EIO=4&transport=websocket"
}

// rawOpen opens an Engine.IO session over WebSocket and returns it with the
// decoded open packet.
func rawOpen(t *testing.T, tg *target) (*websocket.Conn, map[string]any) {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(wsURL(tg.url), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	open := readText(t, conn)
	if !strings.HasPrefix(open, "0") {
		t.Fatalf("first packet %q, want an open packet", open)
	}
	var handshake map[string]any
	if err := json.Unmarshal([]byte(open[1:]), &handshake); err != nil {
		t.Fatal(err)
	}
	return conn, handshake
}

// readText returns the next text frame that is not an Engine.IO ping.
func readText(t *testing.T, conn *websocket.Conn) string {
	t.Helper()
	for {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		kind, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if kind == websocket.TextMessage && string(data) == "2" {
			_ = conn.WriteMessage(websocket.TextMessage, []byte("3"))
			continue
		}
		return string(data)
	}
}

func send(t *testing.T, conn *websocket.Conn, packet string) {
	t.Helper()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(packet)); err != nil {
		t.Fatal(err)
	}
}

// waitClosed reads until the server closes the connection.
func waitClosed(t *testing.T, conn *websocket.Conn) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatal("server did not close the connection within 5s")
			}
			return
		}
	}
}

func TestWireHandshake(t *testing.T) { forEngines(t, testWireHandshake) }

func testWireHandshake(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, suiteConfig)
	_, handshake := rawOpen(t, tg)
	for key, want := range map[string]any{"pingInterval": 300.0, "pingTimeout": 200.0, "maxPayload": 1e6} {
		if handshake[key] != want {
			t.Errorf("open packet %s = %v, want %v", key, handshake[key], want)
		}
	}
	if _, ok := handshake["sid"].(string); !ok {
		t.Errorf("open packet has no sid: %v", handshake)
	}

	resp, err := http.Get(tg.url + "/socket.io/?EIO=4&transport=polling")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"upgrades":["websocket"]`) {
		t.Errorf("polling open: %d %s", resp.StatusCode, body)
	}

	for _, query := range []string{"transport=polling", "EIO=abc&transport=polling", "EIO=4", "EIO=4&transport=abc"} {
		resp, err := http.Get(tg.url + "/socket.io/?" + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET ?%s: status %d, want 400", query, resp.StatusCode)
		}
	}
	resp, err = http.Post(tg.url+"/socket.io/?EIO=4&transport=polling", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST open: status %d, want 400", resp.StatusCode)
	}
}

func TestWireNamespaces(t *testing.T) { forWebSocket(t, testWireNamespaces) }

func testWireNamespaces(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, suiteConfig)
	cases := []struct{ connect, ackPrefix, auth string }{
		{"40", "40", `42["auth",{}]`},
		{`40{"token":"123"}`, "40", `42["auth",{"token":"123"}]`},
		{"40/custom,", "40/custom,", `42/custom,["auth",{}]`},
		{`40/custom,{"token":"abc"}`, "40/custom,", `42/custom,["auth",{"token":"abc"}]`},
	}
	for _, c := range cases {
		conn, _ := rawOpen(t, tg)
		send(t, conn, c.connect)
		ack := readText(t, conn)
		if !strings.HasPrefix(ack, c.ackPrefix+"{") {
			t.Errorf("%s: CONNECT ack %q", c.connect, ack)
			continue
		}
		var payload map[string]any
		if err := json.Unmarshal([]byte(ack[len(c.ackPrefix):]), &payload); err != nil || len(payload) != 1 || payload["sid"] == nil {
			t.Errorf("%s: CONNECT ack payload %q, want only a sid", c.connect, ack)
		}
		if got := readText(t, conn); got != c.auth {
			t.Errorf("%s: auth packet %q, want %q", c.connect, got, c.auth)
		}
	}

	conn, _ := rawOpen(t, tg)
	send(t, conn, "40/random")
	if got := readText(t, conn); got != `44/random,{"message":"Invalid namespace"}` {
		t.Errorf("unknown namespace: %q", got)
	}
	conn, _ = rawOpen(t, tg)
	send(t, conn, "4abc")
	waitClosed(t, conn)
}

// socketIOConn opens a session and joins the main namespace.
func socketIOConn(t *testing.T, tg *target) *websocket.Conn {
	t.Helper()
	conn, _ := rawOpen(t, tg)
	send(t, conn, "40")
	readText(t, conn) // CONNECT ack
	readText(t, conn) // auth
	return conn
}

func TestWireMessages(t *testing.T) { forWebSocket(t, testWireMessages) }

func testWireMessages(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, suiteConfig)
	conn := socketIOConn(t, tg)
	send(t, conn, `42["message",1,"2",{"3":[true]}]`)
	if got := readText(t, conn); got != `42["message-back",1,"2",{"3":[true]}]` {
		t.Errorf("message: %q", got)
	}
	send(t, conn, `42456["message-with-ack",1,"2",{"3":[false]}]`)
	if got := readText(t, conn); got != `43456[1,"2",{"3":[false]}]` {
		t.Errorf("message-with-ack: %q", got)
	}
	send(t, conn, `4212["echo","x"]`)
	if got := readText(t, conn); got != `4312["x"]` {
		t.Errorf("echo: %q", got)
	}

	// Binary attachments come back as they went.
	send(t, conn, `452-["message",{"_placeholder":true,"num":0},{"_placeholder":true,"num":1}]`)
	// The second starts with '0', the first byte of a CONNECT packet: an
	// attachment is not a packet, and must not be taken for one.
	_ = conn.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3})
	_ = conn.WriteMessage(websocket.BinaryMessage, []byte{'0', 5, 6})
	if got := readText(t, conn); got != `452-["message-back",{"_placeholder":true,"num":0},{"_placeholder":true,"num":1}]` {
		t.Errorf("binary message: %q", got)
	}
	for _, want := range []string{"\x01\x02\x03", "0\x05\x06"} {
		if got := readText(t, conn); got != want {
			t.Errorf("attachment %q, want %q", got, want)
		}
	}

	// Disconnecting from a namespace keeps the session for the others.
	send(t, conn, "40/custom,")
	readText(t, conn)
	readText(t, conn)
	send(t, conn, "41/custom,")
	send(t, conn, `42["message","main"]`)
	if got := readText(t, conn); got != `42["message-back","main"]` {
		t.Errorf("after leaving /custom: %q", got)
	}

	for _, bad := range []string{"4abc", "42{}", `42abc["message-with-ack",1]`} {
		c := socketIOConn(t, tg)
		send(t, c, bad)
		waitClosed(t, c)
	}
}

func TestWireHeartbeat(t *testing.T) { forWebSocket(t, testWireHeartbeat) }

func testWireHeartbeat(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, suiteConfig)
	conn, _ := rawOpen(t, tg)
	// The server pings; a client that never answers is closed after
	// pingInterval + pingTimeout.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, data, err := conn.ReadMessage(); err != nil || string(data) != "2" {
		t.Fatalf("want a ping, got %q %v", data, err)
	}
	waitClosed(t, conn)
	waitFor(t, "disconnects{ping timeout} = 1", func() bool { return tg.metrics.Snapshot().Disconnects["ping timeout"] == 1 })
}

// TestHandshakeResults makes each handshake result happen and checks that
// the server counts it as such.
func TestHandshakeResults(t *testing.T) { forWebSocket(t, testHandshakeResults) }

func testHandshakeResults(t *testing.T, engine string) {
	strict := start(t, engine, socketio.Empty, func(c *config.Config) {
		c.SocketIO.ConnectTimeout = 200 * time.Millisecond
		c.SocketIO.Namespaces = []string{"/custom"} // others refused
	})
	// failed: an open request the engine refuses.
	resp, err := http.Get(strict.url + "/socket.io/?EIO=abc&transport=polling")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// failed: a session that never asks for a namespace is closed by the
	// connect timeout.
	idle, _ := rawOpen(t, strict)
	waitClosed(t, idle)
	// rejected: a CONNECT to a namespace that does not exist gets a
	// CONNECT_ERROR; the session then ends without any CONNECT ack.
	refused, _ := rawOpen(t, strict)
	send(t, refused, "40/nope,")
	readText(t, refused)
	refused.Close()
	want := map[string]uint64{protocol.ResultFailed: 2, protocol.ResultRejected: 1, protocol.ResultOK: 0}
	waitFor(t, fmt.Sprintf("handshakes %v", want), func() bool { return equalCounts(strict.metrics.Snapshot().Handshakes, want) })

	tg := start(t, engine, waiting(engine), func(c *config.Config) {
		c.SocketIO.Delay = 300 * time.Millisecond
		c.MaxConns = 2
		c.SocketIO.EmitAuth = true // socketIOConn reads the auth packet
	})
	// abandoned: the client leaves while its connect waits in the loop.
	leaver, _ := rawOpen(t, tg)
	send(t, leaver, "40")
	leaver.Close()
	waitFor(t, "no session held", func() bool { return tg.metrics.Snapshot().ConnectionsActive == 0 })

	// rejected: over -max-conns. Two sessions are held, the third gets 503.
	held := socketIOConn(t, tg)
	defer held.Close()
	second, _ := rawOpen(t, tg)
	defer second.Close()
	_, resp, err = websocket.DefaultDialer.Dial(wsURL(tg.url), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("third connection over -max-conns 2: err %v, response %v; want 503", err, resp)
	}
	want = map[string]uint64{protocol.ResultOK: 1, protocol.ResultFailed: 0, protocol.ResultAbandoned: 1, protocol.ResultRejected: 1}
	waitFor(t, fmt.Sprintf("handshakes %v", want), func() bool { return equalCounts(tg.metrics.Snapshot().Handshakes, want) })
	if n := tg.metrics.Snapshot().MaxConnsRefused; n != 1 {
		t.Errorf("%d handshakes refused at the cap, want 1", n)
	}

	// A place is free again once a session ends.
	second.Close()
	waitFor(t, "one session held", func() bool { return tg.metrics.Snapshot().ConnectionsActive == 1 })
	again, _ := rawOpen(t, tg)
	again.Close()
}

// TestLeaveRightAfterTheAck: a client that reads its CONNECT ack and
// leaves at once completed its handshake, even when its close is handled
// before the code that counts the ack runs (the async model's middleware
// ends on a timer's goroutine; on gnet the ack is written before that
// goroutine counts it).
func TestLeaveRightAfterTheAck(t *testing.T) { forWebSocket(t, testLeaveRightAfterTheAck) }

func testLeaveRightAfterTheAck(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Async, func(c *config.Config) { c.SocketIO.Delay = time.Millisecond })
	const clients = 40
	for range clients {
		conn, _ := rawOpen(t, tg)
		send(t, conn, "40")
		if ack := readText(t, conn); !strings.HasPrefix(ack, "40{") {
			t.Fatalf("CONNECT ack %q", ack)
		}
		conn.Close()
	}
	waitFor(t, "every session closed", func() bool { return tg.metrics.Snapshot().ConnectionsActive == 0 })
	want := map[string]uint64{protocol.ResultOK: clients, protocol.ResultAbandoned: 0, protocol.ResultFailed: 0}
	if got := tg.metrics.Snapshot().Handshakes; !equalCounts(got, want) {
		t.Errorf("handshakes %v, want %v", got, want)
	}
}

// TestConnectTimeoutCoversTheQueue shows a rule that Node's socket.io has
// too: -connect-timeout runs until the namespace CONNECT completes, so on
// the blocking variant a connect that waits in the loop longer than that is
// closed by the server and counted as failed.
func TestConnectTimeoutCoversTheQueue(t *testing.T) {
	forWebSocket(t, testConnectTimeoutCoversTheQueue)
}

func testConnectTimeoutCoversTheQueue(t *testing.T, engine string) {
	tg := start(t, engine, waiting(engine), func(c *config.Config) {
		c.SocketIO.Delay = 300 * time.Millisecond
		c.SocketIO.ConnectTimeout = 200 * time.Millisecond
	})
	conn, _ := rawOpen(t, tg)
	send(t, conn, "40")
	waitClosed(t, conn)
	want := map[string]uint64{protocol.ResultFailed: 1, protocol.ResultOK: 0}
	waitFor(t, fmt.Sprintf("handshakes %v", want), func() bool { return equalCounts(tg.metrics.Snapshot().Handshakes, want) })
}

func equalCounts(got, want map[string]uint64) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// waitFor polls cond for up to 5 s: what the server counts after a client
// acts lags it by a few scheduler turns.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
	}
}

// TestOrigin: with -origin, an open request from another Origin gets 403
// (the Engine.IO FORBIDDEN answer) and counts as failed; a listed one opens.
func TestOrigin(t *testing.T) { forEngines(t, testOrigin) }

func testOrigin(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.Origins = []string{"http://good.example"} })
	for origin, want := range map[string]int{"http://good.example": http.StatusOK, "http://evil.example": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodGet, tg.url+"/socket.io/?EIO=4&transport=polling", nil)
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %s: status %d, want %d", origin, resp.StatusCode, want)
		}
		if origin == "http://good.example" && resp.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("CORS header %q for an allowed origin", resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	waitFor(t, "one failed handshake", func() bool { return tg.metrics.Snapshot().Handshakes[protocol.ResultFailed] == 1 })
}

// TestTransportsAndCompression: -transports refuses the others with 400;
// -compression negotiates permessage-deflate on the WebSocket transport.
func TestTransportsAndCompression(t *testing.T) { forWebSocket(t, testTransportsAndCompression) }

func testTransportsAndCompression(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) {
		c.SocketIO.Transports = []string{"websocket"}
		c.Compression = true
	})
	resp, err := http.Get(tg.url + "/socket.io/?EIO=4&transport=polling")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("polling with -transports websocket: status %d, want 400", resp.StatusCode)
	}
	dialer := websocket.Dialer{EnableCompression: true}
	conn, resp, err := dialer.Dial(wsURL(tg.url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.Contains(ext, "permessage-deflate") {
		t.Errorf("-compression: extensions %q, want permessage-deflate", ext)
	}
	if got := readText(t, conn); !strings.HasPrefix(got, "0{") {
		t.Errorf("open packet over a compressed connection: %q", got)
	}
	// gorilla compresses what it writes once negotiated: the server
	// inflates the CONNECT.
	if err := conn.WriteMessage(websocket.TextMessage, []byte("40")); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, conn); !strings.HasPrefix(got, "40{") {
		t.Errorf("CONNECT ack over a compressed connection: %q", got)
	}
}

// TestOriginWebSocket: with -origin, a WebSocket open request from
// another Origin is refused 403 (Engine.IO's FORBIDDEN) before any
// upgrade; a listed one opens. On the native engine's two transports:
// zishang520 answers such an upgrade 400.
func TestOriginWebSocket(t *testing.T) {
	t.Parallel()
	forEach(t, []string{config.EngineNative, nativeGnet}, testOriginWebSocket)
}

func testOriginWebSocket(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.Origins = []string{"http://good.example"} })
	for origin, want := range map[string]int{"http://good.example": http.StatusSwitchingProtocols, "http://evil.example": http.StatusForbidden} {
		conn, resp, err := websocket.DefaultDialer.Dial(wsURL(tg.url), http.Header{"Origin": {origin}})
		if conn != nil {
			conn.Close()
		}
		if resp == nil {
			t.Fatalf("Origin %s: %v", origin, err)
		}
		if resp.StatusCode != want {
			t.Errorf("Origin %s: status %d, want %d", origin, resp.StatusCode, want)
		}
	}
	waitFor(t, "one failed handshake", func() bool { return tg.metrics.Snapshot().Handshakes[protocol.ResultFailed] == 1 })
}

// TestAttachmentLimit: a binary packet may announce 10 attachments, as on
// Node (socket.io-parser's maxAttachments); one that announces 11 closes
// the session, on both engines.
func TestAttachmentLimit(t *testing.T) { forWebSocket(t, testAttachmentLimit) }

func testAttachmentLimit(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, suiteConfig)
	placeholders := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = fmt.Sprintf(`{"_placeholder":true,"num":%d}`, i)
		}
		return strings.Join(p, ",")
	}
	conn := socketIOConn(t, tg)
	send(t, conn, fmt.Sprintf(`4510-["message",%s]`, placeholders(10)))
	for i := range 10 {
		_ = conn.WriteMessage(websocket.BinaryMessage, []byte{byte(i)})
	}
	if got, want := readText(t, conn), fmt.Sprintf(`4510-["message-back",%s]`, placeholders(10)); got != want {
		t.Errorf("10 attachments: %q, want %q", got, want)
	}
	for i := range 10 {
		if got := readText(t, conn); got != string([]byte{byte(i)}) {
			t.Errorf("attachment %d: %q", i, got)
		}
	}

	conn = socketIOConn(t, tg)
	send(t, conn, fmt.Sprintf(`4511-["message",%s]`, placeholders(11)))
	for i := range 11 {
		if conn.WriteMessage(websocket.BinaryMessage, []byte{byte(i)}) != nil {
			return // closed already
		}
	}
	// Pings are answered, so that only the packet can end the session.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, data, err := conn.ReadMessage()
		switch {
		case err != nil && strings.Contains(err.Error(), "timeout"):
			t.Fatal("11 attachments: the session was not closed within 5 s")
		case err != nil:
			return
		case string(data) == "2":
			_ = conn.WriteMessage(websocket.TextMessage, []byte("3"))
		default:
			t.Fatalf("11 attachments: answered %q, want the session closed", data)
		}
	}
}

package sioengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/shared/leaktest"
)

func TestMain(m *testing.M) {
	// The tests' zishang520 client starts its network monitor at init.
	leaktest.VerifyTestMain(m, leaktest.ZishangTimers)
}

// testOptions: Node's defaults, quick timers, an application that acks
// every event with its arguments and broadcasts "all".
func testOptions() Options {
	return Options{
		PingInterval: 300 * time.Millisecond, PingTimeout: 500 * time.Millisecond, ConnectTimeout: 2 * time.Second,
		MaxPayload: 1000, Transports: []string{Polling, WebSocket}, Namespaces: []string{"/custom"},
	}
}

type engine struct {
	*Server
	url string
}

func startEngine(t *testing.T, o Options) *engine {
	t.Helper()
	if o.Hooks.Event == nil {
		o.Hooks.Event = func(s *Socket, e *Event) {
			if e.Name == "all" {
				s.Namespace().Broadcast("", "all", e.Args, e.Attachments)
				return
			}
			e.Ack(e.Args, e.Attachments)
		}
	}
	s := New(o)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := contextTimeout(2 * time.Second)
		defer cancel()
		s.Close(ctx)
		ts.Close()
	})
	return &engine{Server: s, url: ts.URL + "/socket.io/?EIO=4"}
}

// dialWS opens a session over WebSocket and joins "/".
func dialWS(t *testing.T, e *engine) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.url, "http")+"&transport=websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if open := readWS(t, ws); !strings.HasPrefix(open, `0{"sid":"`) || !strings.Contains(open, `"upgrades":[]`) {
		t.Fatalf("open packet %q", open)
	}
	writeWS(t, ws, "40")
	if ack := readWS(t, ws); !strings.HasPrefix(ack, `40{"sid":"`) {
		t.Fatalf("CONNECT ack %q", ack)
	}
	return ws
}

// readWS returns the next message that is not a ping (pings are answered).
func readWS(t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if string(data) != "2" {
			return string(data)
		}
		writeWS(t, ws, "3")
	}
}

func writeWS(t *testing.T, ws *websocket.Conn, msg string) {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// closedWith reads until the server ends the connection and returns the
// close code (1006 for none).
func closedWith(t *testing.T, ws *websocket.Conn) int {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := ws.ReadMessage()
		var ce *websocket.CloseError
		switch {
		case errors.As(err, &ce):
			return ce.Code
		case err != nil && strings.Contains(err.Error(), "timeout"):
			t.Fatal("the server did not close within 5 s")
		case err != nil:
			return websocket.CloseAbnormalClosure
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "text/plain;charset=UTF-8", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// openPolling opens a polling session and returns its sid.
func openPolling(t *testing.T, e *engine) string {
	t.Helper()
	code, body := get(t, e.url+"&transport=polling")
	var open struct{ Sid string }
	if code != 200 || !strings.HasPrefix(body, "0") || json.Unmarshal([]byte(body[1:]), &open) != nil {
		t.Fatalf("polling open: %d %q", code, body)
	}
	return open.Sid
}

// openPollingConn opens a polling session and returns its sid and the
// engine's Conn for it, for the tests that reach into its timers.
func openPollingConn(t *testing.T, e *engine) (string, *Conn) {
	t.Helper()
	sid := openPolling(t, e)
	v, ok := e.conns.Load(sid)
	if !ok {
		t.Fatalf("session %s not in the engine's map", sid)
	}
	return sid, v.(*Conn)
}

// TestBroadcastEncodedOnce: a broadcast queues the very same frame on
// every member's session, and each gets the same bytes.
func TestBroadcastEncodedOnce(t *testing.T) {
	o := testOptions()
	// No ping in the queues: the frames compared are the broadcast's
	// alone, however long a loaded machine takes to get there.
	o.PingInterval = time.Minute
	e := startEngine(t, o)
	var sids []string
	for range 3 {
		sid := openPolling(t, e)
		if code, _ := post(t, e.url+"&transport=polling&sid="+sid, "40"); code != 200 {
			t.Fatal("CONNECT")
		}
		sids = append(sids, sid)
	}
	for _, sid := range sids { // the CONNECT acks
		if code, body := get(t, e.url+"&transport=polling&sid="+sid); code != 200 || !strings.HasPrefix(body, "40{") {
			t.Fatalf("CONNECT ack: %d %q", code, body)
		}
	}
	if n := e.Namespace("/").Broadcast("", "news", []json.RawMessage{json.RawMessage(`"x"`)}, [][]byte{{7}}); n != 3 {
		t.Fatalf("broadcast reached %d, want 3", n)
	}
	var first []*frame
	e.Conns(func(c *Conn) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if first == nil {
			first = c.queue
		}
		if len(c.queue) != 2 || c.queue[0] != first[0] || c.queue[1] != first[1] {
			t.Errorf("session %s queued %v, want the same two frames as the first (%v)", c.id, c.queue, first)
		}
	})
	for _, sid := range sids {
		if _, body := get(t, e.url+"&transport=polling&sid="+sid); body != "451-[\"news\",\"x\"]\x1ebBw==" {
			t.Errorf("broadcast over polling: %q", body)
		}
	}
}

// TestBinaryAttachments: attachments come back as they went, in their
// order, over WebSocket; a packet that announces more than MaxAttachments,
// or an attachment nobody announced, closes the session.
func TestBinaryAttachments(t *testing.T) {
	e := startEngine(t, testOptions())
	ws := dialWS(t, e)
	writeWS(t, ws, `451-1["echo",{"_placeholder":true,"num":0}]`)
	_ = ws.WriteMessage(websocket.BinaryMessage, []byte("0ab"))
	if got := readWS(t, ws); got != `461-1[{"_placeholder":true,"num":0}]` {
		t.Errorf("binary ack %q", got)
	}
	if got := readWS(t, ws); got != "0ab" {
		t.Errorf("attachment %q", got)
	}
	for _, bad := range []func(*websocket.Conn){
		func(ws *websocket.Conn) { writeWS(t, ws, `4517-["echo"]`) },
		func(ws *websocket.Conn) { _ = ws.WriteMessage(websocket.BinaryMessage, []byte{1}) },
		func(ws *websocket.Conn) { writeWS(t, ws, `451-["echo"]`); writeWS(t, ws, `42["echo"]`) },
	} {
		ws := dialWS(t, e)
		bad(ws)
		if code := closedWith(t, ws); code != websocket.CloseNoStatusReceived {
			t.Errorf("closed with %d, want a close frame without a status (1005), as Node's ws sends", code)
		}
	}
}

// TestBounds: what a client can make the server hold is bounded: a
// message over MaxPayload (1009), a POST over it (413), rooms per socket,
// frames queued for a client that does not read.
func TestBounds(t *testing.T) {
	e := startEngine(t, testOptions())
	ws := dialWS(t, e)
	writeWS(t, ws, "4"+strings.Repeat("x", 1000))
	if code := closedWith(t, ws); code != websocket.CloseMessageTooBig {
		t.Errorf("a message over MaxPayload: closed with %d, want 1009", code)
	}

	sid := openPolling(t, e)
	if code, _ := post(t, e.url+"&transport=polling&sid="+sid, strings.Repeat("4", 1001)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a POST over MaxPayload: %d, want 413", code)
	}
	post(t, e.url+"&transport=polling&sid="+sid, "40")
	get(t, e.url+"&transport=polling&sid="+sid) // the ack
	var c *Conn
	e.Conns(func(x *Conn) {
		if x.id == sid {
			c = x
		}
	})
	c.mu.Lock()
	s := c.sockets["/"]
	c.mu.Unlock()
	for i := range maxRooms {
		if !s.Join(strings.Repeat("r", i%7) + string(rune('a'+i%26)) + json.Number(rune(i)).String()) {
			t.Fatalf("join %d refused, under the bound", i)
		}
	}
	if s.Join("one-more") {
		t.Errorf("join past %d rooms accepted", maxRooms)
	}
	// A client that never polls: past maxQueued frames its session ends.
	for i := 0; i <= maxQueued && c.isOpen(); i++ {
		s.Emit("x", nil, nil)
	}
	if c.isOpen() {
		t.Errorf("a session with %d frames queued is still open", maxQueued)
	}
}

// TestErrors: Node's engine.io answers to bad requests.
func TestErrors(t *testing.T) {
	e := startEngine(t, testOptions())
	for _, c := range []struct{ query, want string }{
		{"&transport=pigeon", `{"code":0,"message":"Transport unknown"}`},
		{"&transport=polling&sid=nope", `{"code":1,"message":"Session ID unknown"}`},
		{"&transport=websocket", `{"code":3,"message":"Bad request"}`},
	} {
		if code, body := get(t, e.url+c.query); code != 400 || body != c.want {
			t.Errorf("GET %s: %d %s, want 400 %s", c.query, code, body, c.want)
		}
	}
	if code, body := get(t, strings.Replace(e.url, "EIO=4", "EIO=3", 1)+"&transport=polling"); code != 400 || body != `{"code":5,"message":"Unsupported protocol version"}` {
		t.Errorf("EIO=3: %d %s", code, body)
	}
	if code, body := post(t, e.url+"&transport=polling", "40"); code != 400 || body != `{"code":2,"message":"Bad handshake method"}` {
		t.Errorf("POST open: %d %s", code, body)
	}
	sid := openPolling(t, e)
	if code, _ := post(t, e.url+"&transport=polling&sid="+sid, "2"); code != 200 {
		t.Errorf("a client ping: %d", code)
	}
	// Engine.IO v4: only the server pings; Node ends the session.
	if code, _ := get(t, e.url+"&transport=polling&sid="+sid); code != 400 {
		t.Errorf("GET after a client ping: %d, want 400", code)
	}
}

// TestHeartbeatDueWithoutItsTimer: a request that arrives after a
// session's ping timeout was due finds the session gone, though the timer
// that ends it has not run (a loaded process runs its timers late; Node's
// run on time). The socket.io-protocol suite checks it: open a polling
// session, sleep pingInterval + pingTimeout, GET gets 400. A ping that
// went out late to a client that was polling has pingTimeout from then,
// as in Node: the client answers it in time.
func TestHeartbeatDueWithoutItsTimer(t *testing.T) {
	o := testOptions()
	o.PingInterval, o.PingTimeout = 50*time.Millisecond, 50*time.Millisecond
	reasons := closeReasons(&o, 2)
	e := startEngine(t, o)
	// stalled opens a polling session whose heartbeat timer is stopped:
	// it stands for a timer that has not run yet.
	stalled := func() (string, *Conn) {
		sid, c := openPollingConn(t, e)
		c.mu.Lock()
		c.heartbeat.Stop()
		c.mu.Unlock()
		return sid, c
	}

	sid, _ := stalled()
	// The time passing is what is under test: past the ping timeout.
	time.Sleep(o.PingInterval + o.PingTimeout)
	if code, body := get(t, e.url+"&transport=polling&sid="+sid); code != 400 || body != `{"code":1,"message":"Session ID unknown"}` {
		t.Errorf("GET after the ping timeout: %d %s, want 400 Session ID unknown", code, body)
	}
	wantClosedWith(t, reasons, "ping timeout")

	sid, c := stalled()
	polled := make(chan string, 1)
	go func() {
		resp, err := http.Get(e.url + "&transport=polling&sid=" + sid)
		if err != nil {
			polled <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		polled <- fmt.Sprint(resp.StatusCode, " ", string(body))
	}()
	waitUntil(t, "a long-poll pending", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.poll != nil
	})
	time.Sleep(o.PingInterval + o.PingTimeout) // the ping is that late
	c.beat()
	if got := <-polled; got != "200 2" {
		t.Fatalf("the late ping: %s, want 200 2", got)
	}
	if code, body := post(t, e.url+"&transport=polling&sid="+sid, "3"); code != 200 {
		t.Errorf("the pong to a late ping: %d %s, want 200", code, body)
	}
}

// TestClosedSessionIsGone: terminate marks a session closed, then takes it
// out of the session map. A request that finds it in between gets Node's
// answer for a session gone, 400 Session ID unknown, not a long-poll's
// noop: the socket.io-protocol suite's ping timeout case met it on a
// loaded machine.
func TestClosedSessionIsGone(t *testing.T) {
	e := startEngine(t, testOptions())
	sid, c := openPollingConn(t, e)
	c.mu.Lock()
	open := c.state
	c.state = stateClosed // as terminate leaves it before the Delete
	c.mu.Unlock()
	const gone = `{"code":1,"message":"Session ID unknown"}`
	if code, body := get(t, e.url+"&transport=polling&sid="+sid); code != 400 || body != gone {
		t.Errorf("GET: %d %s, want 400 %s", code, body, gone)
	}
	if code, body := post(t, e.url+"&transport=polling&sid="+sid, "40"); code != 400 || body != gone {
		t.Errorf("POST: %d %s, want 400 %s", code, body, gone)
	}
	c.mu.Lock()
	c.state = open
	c.mu.Unlock()
	c.terminate("transport close")
}

// TestConnectTimeoutBeforeALatePing: when the heartbeat's timer runs
// after the connect timeout was due, before the connect timeout's own (a
// loaded process runs due timers in any order), the session is closed by
// the connect timeout, as on Node, whose timers run in due order: the
// pending long-poll gets the close packet, not a ping.
func TestConnectTimeoutBeforeALatePing(t *testing.T) {
	o := testOptions()
	o.ConnectTimeout = 50 * time.Millisecond
	reasons := closeReasons(&o, 1)
	e := startEngine(t, o)
	sid, c := openPollingConn(t, e)
	// Both timers stopped: they stand for timers that have not run yet.
	c.mu.Lock()
	c.heartbeat.Stop()
	c.connectTmr.Stop()
	c.mu.Unlock()
	time.Sleep(o.ConnectTimeout) // the connect timeout is due
	c.beat()                     // and the heartbeat's timer runs first
	if code, body := get(t, e.url+"&transport=polling&sid="+sid); code != 200 || body != "1" {
		t.Errorf("long-poll after a late heartbeat past the connect timeout: %d %q, want 200 and the close packet (1)", code, body)
	}
	wantClosedWith(t, reasons, "forced close") // the connect timeout
}

// TestConnectTimeoutBeforeALateAdmit: a CONNECT whose middleware ends
// after the connect timeout was due, its timer not run yet (the blocking
// model's queue on a loaded process), gets no ack: the session is closed
// by the connect timeout, as on Node, whose timer would have run first.
func TestConnectTimeoutBeforeALateAdmit(t *testing.T) {
	o := testOptions()
	o.ConnectTimeout = 50 * time.Millisecond
	reasons := closeReasons(&o, 1)
	admitted := make(chan func(error), 1)
	o.Hooks.Connecting = func(_ *Socket, next func(error)) { admitted <- next }
	e := startEngine(t, o)
	sid, c := openPollingConn(t, e)
	c.mu.Lock()
	c.connectTmr.Stop() // it stands for a timer that has not run yet
	c.mu.Unlock()
	if code, body := post(t, e.url+"&transport=polling&sid="+sid, "40"); code != 200 || body != "ok" {
		t.Fatalf("CONNECT: %d %q", code, body)
	}
	next := <-admitted
	time.Sleep(o.ConnectTimeout) // the connect timeout is due
	next(nil)                    // and the middleware ends
	if code, body := get(t, e.url+"&transport=polling&sid="+sid); code != 200 || body != "1" {
		t.Errorf("long-poll after a middleware that ended past the connect timeout: %d %q, want 200 and the close packet (1), no ack", code, body)
	}
	wantClosedWith(t, reasons, "forced close") // the connect timeout
}

// closeReasons makes o's Closed hook send each session's close reason, the
// first n of them, on the channel it returns.
func closeReasons(o *Options, n int) <-chan string {
	reasons := make(chan string, n)
	o.Hooks.Closed = func(_ *Conn, reason string) {
		select {
		case reasons <- reason:
		default:
		}
	}
	return reasons
}

// wantClosedWith waits up to 5 s for a session's close reason on reasons,
// and wants it to be want.
func wantClosedWith(t *testing.T, reasons <-chan string, want string) {
	t.Helper()
	select {
	case reason := <-reasons:
		if reason != want {
			t.Errorf("session closed with %q, want %q", reason, want)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the session was not closed (want %q)", want)
	}
}

// waitUntil polls cond for up to 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
	}
}

// TestAnyNamespace: with AnyNamespace a CONNECT makes the namespace it
// names (NamespaceMade is told once), up to MaxNamespaces; past that a new
// one is refused as unknown, while those made stay joinable.
func TestAnyNamespace(t *testing.T) {
	var made []string
	var mu sync.Mutex
	o := testOptions()
	o.AnyNamespace, o.MaxNamespaces = true, 2
	o.Hooks.NamespaceMade = func(n *Namespace) {
		mu.Lock()
		made = append(made, n.Name())
		mu.Unlock()
	}
	e := startEngine(t, o)
	ws := dialWS(t, e)
	for _, c := range []struct{ connect, want string }{
		{"40/a,", `40/a,{"sid":"`},
		{"40/b,", `40/b,{"sid":"`},
		{"40/c,", `44/c,{"message":"Invalid namespace"}`},
		{"40/a,", `40/a,{"sid":"`},
	} {
		writeWS(t, ws, c.connect)
		if got := readWS(t, ws); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %s...", c.connect, got, c.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(made) != "[/a /b]" {
		t.Errorf("NamespaceMade told of %v, want [/a /b]", made)
	}
}

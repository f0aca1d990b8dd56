package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// stepEvent is what happened to one connection of a stepClient: open,
// refused (Status, the HTTP answer when known), message (Data), close
// (Code, or Reason).
type stepEvent struct {
	Conn, Event, Data, Message, Reason string
	Status, Code                       int
}

// stepClient is a real client whose connections a test drives one step
// at a time: open, send, and the next event of each connection.
type stepClient interface {
	open(name string)
	send(name, data string)
	// events delivers every connection's events, in the order each
	// connection saw them.
	events() <-chan stepEvent
}

// steps reads a stepClient's events, connection by connection.
type steps struct {
	t       *testing.T
	c       stepClient
	pending map[string][]stepEvent
}

// next is the next event of connection name, within 30 s.
func (s *steps) next(name string) stepEvent {
	s.t.Helper()
	timeout := time.After(30 * time.Second)
	for len(s.pending[name]) == 0 {
		select {
		case e, ok := <-s.c.events():
			if !ok {
				s.t.Fatalf("the client ended, waiting for %s", name)
			}
			s.pending[e.Conn] = append(s.pending[e.Conn], e)
		case <-timeout:
			s.t.Fatalf("no event of %s in 30 s", name)
		}
	}
	e := s.pending[name][0]
	s.pending[name] = s.pending[name][1:]
	return e
}

// echoes reads connection name's messages until they add up to want, in
// order (a TCP client's reads may split or join them), or in any order.
func (s *steps) echoes(name string, ordered bool, want ...string) {
	s.t.Helper()
	var got []string
	for len(strings.Join(got, "")) < len(strings.Join(want, "")) {
		e := s.next(name)
		if e.Event != "message" {
			s.t.Fatalf("%s: %+v after %q; want the echoes %q", name, e, got, want)
		}
		got = append(got, e.Data)
	}
	if !ordered {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	if strings.Join(got, "") != strings.Join(want, "") {
		s.t.Fatalf("%s: echoes %q, want %q", name, got, want)
	}
}

func (s *steps) echo(name, data string) {
	s.t.Helper()
	s.c.send(name, data)
	s.echoes(name, true, data)
}

func (s *steps) opened(name string) {
	s.t.Helper()
	s.c.open(name)
	if e := s.next(name); e.Event != "open" {
		s.t.Fatalf("open %s: %+v", name, e)
	}
}

// faultCase is how one kind of target and client shows the modes.
type faultCase struct {
	client stepClient
	// refusal is the Status a refused handshake reports (echo-tcp closes
	// at once: 0).
	refusal int
	// closed checks the event that ends a connection closed by
	// -fault-close-after.
	closed func(e stepEvent) bool
	// ordered: delayed replies keep their order across a change of the
	// delay (not Socket.IO, whose events are answered on timers of their
	// own).
	ordered bool
	// socketIO: the Socket.IO modes apply too.
	socketIO bool
}

// postFault orders POST /control/fault?query and returns the answer.
func postFault(t *testing.T, s *server, query string) admin.FaultAnswer {
	t.Helper()
	var a admin.FaultAnswer
	if err := json.Unmarshal([]byte(postControl(t, s, "/control/fault?"+query)), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// runFaultSteps switches every mode in turn on a running target: no
// fault; reject (a new handshake refused, the open connection untouched);
// drop (a message dropped and counted, the next one echoed); delay (the
// reply held, the next one behind it on the WebSocket targets); close-after
// on a connection open since the start; all off (normal again), each order
// answered with the modes in force, which /control/fault and /health show.
func runFaultSteps(t *testing.T, s *server, fc faultCase) {
	st := &steps{t: t, c: fc.client, pending: map[string][]stepEvent{}}
	faultCount := func(kind string) uint64 { return s.stats(t).Faults[kind] }
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	st.opened("a")
	st.echo("a", "no-fault")

	if a := postFault(t, s, "reject=1"); !slices.Equal(a.On, []string{"reject"}) || a.Modes["reject"] != "1" {
		t.Fatalf("reject=1 answered %+v", a)
	}
	fc.client.open("b")
	if e := st.next("b"); e.Event != "refused" || e.Status != fc.refusal {
		t.Fatalf("a handshake with reject on: %+v; want refused with %d", e, fc.refusal)
	}
	st.echo("a", "after-reject")

	postFault(t, s, "reject=off&drop=1")
	fc.client.send("a", "dropped")
	wait("the drop counted", func() bool { return faultCount(faults.KindDrop) == 1 })
	postFault(t, s, "drop=0")
	st.echo("a", "after-drop") // the first thing back: the dropped one never comes

	const delay = 200 * time.Millisecond
	postFault(t, s, "delay=200ms")
	began := time.Now()
	fc.client.send("a", "delayed")
	wait("the delay counted", func() bool { return faultCount(faults.KindDelay) == 1 })
	postFault(t, s, "delay=off")
	fc.client.send("a", "behind")
	st.echoes("a", fc.ordered, "delayed", "behind")
	if took := time.Since(began); took < delay*9/10 {
		t.Errorf("the delayed echo came back after %v, want at least %v", took, delay)
	}

	if fc.socketIO {
		// Applies to the connections made after it: a leaked timer is
		// started at the connect.
		postFault(t, s, "leak-timers=1s")
		st.opened("leaky")
		wait("the leaked timer counted", func() bool { return faultCount(faults.KindLeakTimer) == 1 })
		postFault(t, s, "leak-timers=off")
	}

	// The connection open since the start counts from the change.
	postFault(t, s, "close-after=2")
	st.echo("a", "one")
	st.echo("a", "two")
	if e := st.next("a"); e.Event != "close" || !fc.closed(e) {
		t.Fatalf("after 2 messages with close-after=2: %+v; want the fault's close", e)
	}

	postFault(t, s, "drop=0.5&delay=1s")
	if a := postFault(t, s, "all=off"); len(a.On) != 0 {
		t.Fatalf("all=off answered %+v", a)
	}
	st.opened("c")
	for i := range 5 {
		st.echo("c", fmt.Sprint("normal-", i))
	}

	res, err := http.Get(s.admin + "/control/fault")
	if err != nil {
		t.Fatal(err)
	}
	var shown admin.FaultAnswer
	if err := json.NewDecoder(res.Body).Decode(&shown); err != nil || len(shown.On) != 0 {
		t.Errorf("GET /control/fault: %+v, %v; want every mode off", shown, err)
	}
	res.Body.Close()
	health := s.health(t)
	for name, v := range (faults.Modes{}).Values() {
		if got := health.Config["fault-"+name]; got != v {
			t.Errorf("/health fault-%s = %q, want %q", name, got, v)
		}
	}
	stats := s.stats(t)
	orders := uint64(8)
	if fc.socketIO {
		orders += 2
	}
	want := map[string]uint64{faults.KindReject: 1, faults.KindDrop: 1, faults.KindDelay: 1, faults.KindCloseAfter: 1}
	if fc.socketIO {
		want[faults.KindLeakTimer] = 1
	}
	if !maps.Equal(stats.Faults, want) || stats.Controls["fault"] != orders || stats.Handshakes[protocol.ResultRejected] != 1 {
		t.Errorf("faults %v, controls %v, handshakes %v; want faults %v, %d fault orders, 1 rejected", stats.Faults, stats.Controls, stats.Handshakes, want, orders)
	}
}

// health reads /health.
func (s *server) health(t *testing.T) admin.Health {
	t.Helper()
	res, err := http.Get(s.admin + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var h admin.Health
	if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFaultControlWebSocket: Node's ws against every WebSocket echo
// library, the modes switched from the admin listener.
func TestFaultControlWebSocket(t *testing.T) {
	t.Parallel()
	need(t, "ws (scripts/node_modules)", haveNodeClients())
	for _, v := range variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket)) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "-variant", v.Name)
			c := startNodeSteps(t, "--client", "ws", "--url", echoURL(s))
			runFaultSteps(t, s, faultCase{client: c, refusal: http.StatusServiceUnavailable, ordered: true,
				closed: func(e stepEvent) bool { return e.Code == faults.CloseCode }})
		})
	}
}

// TestFaultControlSocketIO: the official socket.io-client on each engine
// (polling first, then the upgrade; WebSocket alone on native-gnet).
func TestFaultControlSocketIO(t *testing.T) { forWebSocketEngines(t, testFaultControlSocketIO) }

func testFaultControlSocketIO(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	s := startServer(t, append(engineFlags(engine), "-variant", "empty")...)
	c := startNodeSteps(t, "--client", "socket.io", "--url", s.url, "--transports", strings.Join(transportsOn(engine, "polling,websocket"), ","))
	runFaultSteps(t, s, faultCase{client: c, refusal: http.StatusServiceUnavailable, socketIO: true,
		closed: func(e stepEvent) bool { return e.Reason == "io server disconnect" }})
}

// TestFaultControlBroadcast: coder's Go client against every broadcast
// target, speaking its echo message.
func TestFaultControlBroadcast(t *testing.T) {
	t.Parallel()
	for _, v := range variants.Where(variants.InFamily(variants.Broadcast)) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "-variant", v.Name)
			runFaultSteps(t, s, faultCase{client: newCoderSteps(t, "ws"+strings.TrimPrefix(s.url, "http")+"/"),
				refusal: http.StatusServiceUnavailable, ordered: true,
				closed: func(e stepEvent) bool { return e.Code == faults.CloseCode }})
		})
	}
}

// TestFaultControlTCP: a plain TCP client against echo-tcp, which refuses
// by closing at once and ends a connection by closing it.
func TestFaultControlTCP(t *testing.T) {
	t.Parallel()
	s := startServer(t, "-variant", "echo-tcp")
	runFaultSteps(t, s, faultCase{client: newTCPSteps(t, strings.TrimPrefix(s.url, "http://")), ordered: true,
		closed: func(e stepEvent) bool { return e.Reason == "EOF" }})
}

// nodeSteps is scripts/clients/client-steps.mjs.
type nodeSteps struct {
	t   *testing.T
	in  io.WriteCloser
	out chan stepEvent
}

func startNodeSteps(t *testing.T, args ...string) *nodeSteps {
	t.Helper()
	r := startClient(t, "client-steps.mjs", args...)
	c := &nodeSteps{t: t, in: r.stdin, out: make(chan stepEvent, 64)}
	go func() {
		defer close(c.out)
		for line := range r.lines {
			var e stepEvent
			if err := json.Unmarshal(line, &e); err != nil || e.Event == "error" {
				t.Errorf("client-steps.mjs printed %s", line)
				continue
			}
			c.out <- e
		}
	}()
	t.Cleanup(func() {
		go func() {
			for range c.out { // what the test did not read: the script ends after this cleanup
			}
		}()
	})
	return c
}

func (c *nodeSteps) do(cmd map[string]string) {
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

func (c *nodeSteps) open(name string)         { c.do(map[string]string{"open": name}) }
func (c *nodeSteps) send(name, data string)   { c.do(map[string]string{"send": name, "data": data}) }
func (c *nodeSteps) events() <-chan stepEvent { return c.out }

// goSteps are the connections of a Go client, each read by a goroutine of
// its own.
type goSteps struct {
	t     *testing.T
	out   chan stepEvent
	mu    sync.Mutex
	conns map[string]func(data string)
}

func newGoSteps(t *testing.T) *goSteps {
	return &goSteps{t: t, out: make(chan stepEvent, 64), conns: map[string]func(string){}}
}

func (c *goSteps) events() <-chan stepEvent { return c.out }

func (c *goSteps) send(name, data string) {
	c.mu.Lock()
	send := c.conns[name]
	c.mu.Unlock()
	send(data)
}

// coderSteps is coder/websocket's client speaking the broadcast targets'
// echo message: {"type":"echo","payload":DATA}, answered with the same.
type coderSteps struct {
	*goSteps
	url string
}

func newCoderSteps(t *testing.T, url string) *coderSteps {
	return &coderSteps{goSteps: newGoSteps(t), url: url}
}

func (c *coderSteps) open(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, c.url, nil)
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		c.out <- stepEvent{Conn: name, Event: "refused", Status: status, Message: err.Error()}
		return
	}
	c.t.Cleanup(func() { _ = conn.CloseNow() })
	c.mu.Lock()
	c.conns[name] = func(data string) {
		payload, _ := json.Marshal(data)
		msg, _ := json.Marshal(protocol.BroadcastMessage{Type: protocol.TypeEcho, Payload: payload})
		if err := conn.Write(context.Background(), websocket.MessageText, msg); err != nil {
			c.t.Errorf("%s: %v", name, err)
		}
	}
	c.mu.Unlock()
	c.out <- stepEvent{Conn: name, Event: "open"}
	go func() {
		for {
			_, msg, err := conn.Read(context.Background())
			if err != nil {
				c.out <- stepEvent{Conn: name, Event: "close", Code: int(websocket.CloseStatus(err)), Reason: err.Error()}
				return
			}
			var m protocol.BroadcastMessage
			var data string
			if json.Unmarshal(msg, &m) != nil || m.Type != protocol.TypeEcho || json.Unmarshal(m.Payload, &data) != nil {
				data = "unexpected: " + string(msg)
			}
			c.out <- stepEvent{Conn: name, Event: "message", Data: data}
		}
	}()
}

// tcpSteps is a plain TCP client. A connection is open once the target
// has echoed a first "hi"; one closed before that was refused (echo-tcp
// closes a refused connection at once). Each read is a message event.
type tcpSteps struct {
	*goSteps
	addr string
}

func newTCPSteps(t *testing.T, addr string) *tcpSteps {
	return &tcpSteps{goSteps: newGoSteps(t), addr: addr}
}

func (c *tcpSteps) open(name string) {
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	hi := make([]byte, 2)
	_, err = conn.Write([]byte("hi"))
	if err == nil {
		_, err = io.ReadFull(conn, hi)
	}
	if err != nil {
		c.out <- stepEvent{Conn: name, Event: "refused", Message: err.Error()}
		return
	}
	_ = conn.SetReadDeadline(time.Time{}) // the test's Cleanup closes it
	c.mu.Lock()
	c.conns[name] = func(data string) {
		if _, err := conn.Write([]byte(data)); err != nil {
			c.t.Errorf("%s: %v", name, err)
		}
	}
	c.mu.Unlock()
	c.out <- stepEvent{Conn: name, Event: "open"}
	go func() {
		buf := make([]byte, 1024)
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				c.out <- stepEvent{Conn: name, Event: "message", Data: string(buf[:n])}
			}
			if err != nil {
				reason := err.Error()
				if errors.Is(err, io.EOF) {
					reason = "EOF"
				}
				c.out <- stepEvent{Conn: name, Event: "close", Reason: reason}
				return
			}
		}
	}()
}

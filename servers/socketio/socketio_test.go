package socketio_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/internal/settings"

	"github.com/prometheus/client_golang/prometheus"
	csocket "github.com/zishang520/socket.io/clients/socket/v3"

	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/leaktest"
	"github.com/knowngood/knowngood/shared/metrics"
)

func TestMain(m *testing.M) {
	// The zishang520 client starts a network monitor at init that it never
	// stops (running before the tests, so left out), and the library, client
	// and server, leaves one-shot timers to fire after a session ends.
	leaktest.VerifyTestMain(m, leaktest.ZishangTimers)
}

// target is a Socket.IO target running in the test process.
type target struct {
	url     string
	reg     *prometheus.Registry // the metrics' registry
	metrics *metrics.Metrics
	srv     *socketio.Server
	done    chan error
}

// engines are the engines every test here runs on: the two must behave
// the same.
var engines = []string{config.EngineZishang520, config.EngineNative}

// waiting is a connect model whose connects wait -delay on an engine:
// blocking, but on gnet, which refuses it, async.
func waiting(engine string) socketio.Mode {
	if engine == nativeGnet {
		return socketio.Async
	}
	return socketio.Blocking
}

// nativeGnet is the native engine on gnet's event loops: it serves
// WebSocket sessions only, so it runs the tests that use nothing else
// (forWebSocket).
const nativeGnet = config.EngineNativeGnet

// webSocketEngines are the engines and the native engine's gnet
// transport: the targets of a test of WebSocket sessions.
var webSocketEngines = append(slices.Clone(engines), nativeGnet)

// forWebSocket runs a test of WebSocket sessions once on each engine and
// once on the native engine's gnet transport, side by side: each run has a
// target of its own on a port of its own. The test itself runs in
// parallel with the package's others.
func forWebSocket(t *testing.T, test func(t *testing.T, engine string)) {
	t.Parallel()
	forEach(t, webSocketEngines, test)
}

// forEngines runs test once on each engine, as parallel subtests named
// after it; the test itself runs in parallel with the package's others.
func forEngines(t *testing.T, test func(t *testing.T, engine string)) {
	t.Parallel()
	forEach(t, engines, test)
}

func forEach(t *testing.T, on []string, test func(t *testing.T, engine string)) {
	for _, engine := range on {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			test(t, engine)
		})
	}
}

// inTurn runs test on each of on, one after the other: for the tests whose
// margins are timings that other targets' work would eat into.
func inTurn(t *testing.T, on []string, test func(t *testing.T, engine string)) {
	for _, engine := range on {
		t.Run(engine, func(t *testing.T) { test(t, engine) })
	}
}

// start runs a target on 127.0.0.1:0 on an engine and shuts it down when
// the test ends.
func start(t testing.TB, engine string, mode socketio.Mode, tweak func(*config.Config)) *target {
	t.Helper()
	cfg := config.Default()
	cfg.Variant = string(mode)
	cfg.SocketIO.Engine = engine
	if tweak != nil {
		tweak(&cfg)
	}
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, cfg.Variant)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := socketio.New(mode, settings.SocketIO(cfg), m, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{url: "http://" + ln.Addr().String(), reg: reg, metrics: m, srv: srv, done: make(chan error, 1)}
	go func() { tg.done <- srv.Serve(ln) }()
	t.Cleanup(func() { tg.shutdown(t) })
	return tg
}

func (tg *target) shutdown(t testing.TB) { tg.shutdownWithin(t, 5*time.Second) }

func (tg *target) shutdownWithin(t testing.TB, timeout time.Duration) {
	if tg.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tg.srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := <-tg.done; err != nil {
		t.Errorf("serve: %v", err)
	}
	tg.srv = nil
}

// client is the zishang520 Go client, through loadgen/sioclient: used
// plainly, that client loses connects and sends duplicate CONNECTs under
// concurrency (servers/README.md, "Known problems of the Socket.IO libraries"); sioclient sets its
// transports explicitly and opens them only once every listener is in
// place.
type client struct {
	*csocket.Socket
	connectedAt time.Time
	events      chan []any
	mu          sync.Mutex
	disconnect  string // the reason, once disconnected
}

// dial connects a Go client and waits for its namespace CONNECT.
func dial(t *testing.T, url, nsp string, transports []string, auth map[string]any) *client {
	t.Helper()
	c, err := connect(t, url, nsp, transports, auth)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// connect is dial for goroutines other than the test's, which must not
// call t.Fatal.
func connect(t *testing.T, url, nsp string, transports []string, auth map[string]any) (*client, error) {
	c := &client{events: make(chan []any, 64)}
	conn, err := sioclient.Dial(sioclient.Options{
		URL: url, Namespace: nsp, Transport: strings.Join(transports, ","), Auth: auth,
		OnSocket: func(s *csocket.Socket) {
			s.On("connect", func(...any) { c.connectedAt = time.Now() })
			s.On("disconnect", func(args ...any) {
				c.mu.Lock()
				c.disconnect = fmt.Sprint(args...)
				c.mu.Unlock()
			})
			s.OnAny(func(args ...any) {
				select {
				case c.events <- args:
				default:
				}
			})
		},
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.Wait(ctx); err != nil {
		return nil, fmt.Errorf("connect %s: %w", nsp, err)
	}
	c.Socket = conn.Socket()
	return c, nil
}

// emitAck emits an event with an ack and returns the ack's arguments.
func (c *client) emitAck(t *testing.T, event string, args ...any) []any {
	t.Helper()
	got := make(chan []any, 1)
	ack := func(a []any, err error) {
		if err != nil {
			t.Errorf("%q ack: %v (disconnect reason %q)", event, err, c.reason())
		}
		got <- a
	}
	if err := c.Emit(event, append(args, ack)...); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-got:
		return a
	case <-time.After(10 * time.Second):
		t.Fatalf("no ack for %q within 10s", event)
		return nil
	}
}

func (c *client) reason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.disconnect
}

func (c *client) nextEvent(t *testing.T) []any {
	t.Helper()
	e, ok := c.waitEvent(10 * time.Second)
	if !ok {
		t.Fatalf("no event within 10s (disconnect reason %q)", c.reason())
	}
	return e
}

func (c *client) waitEvent(within time.Duration) ([]any, bool) {
	select {
	case e := <-c.events:
		return e, true
	case <-time.After(within):
		return nil, false
	}
}

// dialAuthed dials a client of an EmitAuth target and returns it with
// its first event, the auth event sent on connect. The default engine
// loses about one packet in 1,000 sent around the polling-to-WebSocket
// upgrade (servers/README.md, "Known problems of the Socket.IO
// libraries"), and the auth event goes out just as the upgrade starts:
// there a lost auth event is logged and the client dialled once more.
func dialAuthed(t *testing.T, engine, url, nsp string, transports []string, auth map[string]any) (*client, []any) {
	t.Helper()
	c := dial(t, url, nsp, transports, auth)
	e, ok := c.waitEvent(10 * time.Second)
	if !ok && engine == "zishang520" && len(transports) > 1 {
		t.Logf("auth event lost around the upgrade (disconnect reason %q), a known loss of this engine; dialling again", c.reason())
		c = dial(t, url, nsp, transports, auth)
		e, ok = c.waitEvent(10 * time.Second)
	}
	if !ok {
		t.Fatalf("no auth event within 10s (disconnect reason %q)", c.reason())
	}
	return c, e
}

// transportSets are the Go client's transports in these tests. Polling
// alone is left to the JS and Python clients and to the wire tests.
var transportSets = map[string][]string{
	"websocket":         {"websocket"},
	"polling+websocket": {"polling", "websocket"},
}

// transportsOn are the transport sets an engine serves: the gnet
// transport serves WebSocket sessions only.
func transportsOn(engine string) map[string][]string {
	if engine == nativeGnet {
		return map[string][]string{"websocket": {"websocket"}}
	}
	return transportSets
}

func TestEvents(t *testing.T) { forWebSocket(t, testEvents) }

func testEvents(t *testing.T, engine string) {
	for name, transports := range transportsOn(engine) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.SocketIO.EmitAuth = true })
			a, got := dialAuthed(t, engine, tg.url, "/", transports, map[string]any{"token": "123"})
			if fmt.Sprint(got) != "[auth map[token:123]]" {
				t.Errorf("auth event = %v", got)
			}

			if got := a.emitAck(t, "echo", "hi", 1.5, map[string]any{"k": true}); fmt.Sprint(got) != "[hi 1.5 map[k:true]]" {
				t.Errorf("echo ack = %v", got)
			}
			if got := a.emitAck(t, "message-with-ack", 1, "2"); fmt.Sprint(got) != "[1 2]" {
				t.Errorf("message-with-ack ack = %v", got)
			}
			if err := a.Emit("message", "x", 2); err != nil {
				t.Fatal(err)
			}
			if got := a.nextEvent(t); fmt.Sprint(got) != "[message-back x 2]" {
				t.Errorf("message -> %v", got)
			}
			if got := a.emitAck(t, "join", "room-1"); fmt.Sprint(got) != "[room-1]" {
				t.Errorf("join ack = %v", got)
			}

			b, got := dialAuthed(t, engine, tg.url, "/", transports, nil)
			if fmt.Sprint(got) != "[auth map[]]" {
				t.Errorf("auth event without auth = %v", got)
			}
			if got := a.emitAck(t, "broadcast", "all"); fmt.Sprint(got) != "[2]" {
				t.Errorf("broadcast ack (listeners) = %v", got)
			}
			for _, c := range []*client{a, b} {
				if got := c.nextEvent(t); fmt.Sprint(got) != "[broadcast all]" {
					t.Errorf("broadcast received = %v", got)
				}
			}

			// Only a joined room-1: b is not in it.
			roomOfOne(t, b, a, "room-1", "members")
			// Each socket is in the room of its id, as in Node.
			roomOfOne(t, b, a, fmt.Sprint(a.Id()), "own")

			custom := dial(t, tg.url, "/custom", transports, nil)
			if got := custom.emitAck(t, "echo", "custom"); fmt.Sprint(got) != "[custom]" {
				t.Errorf("echo on /custom = %v", got)
			}
		})
	}
}

// roomOfOne has from, outside room, send broadcast-room to it: the ack
// counts one member, member gets the payload, and from (its echo answered
// after) does not.
func roomOfOne(t *testing.T, from, member *client, room, payload string) {
	t.Helper()
	if got := from.emitAck(t, "broadcast-room", room, payload); fmt.Sprint(got) != "[1]" {
		t.Errorf("broadcast-room to %s: ack %v, want [1]", room, got)
	}
	if got := member.nextEvent(t); fmt.Sprint(got) != "[broadcast "+payload+"]" {
		t.Errorf("broadcast-room to %s received = %v", room, got)
	}
	if got := from.emitAck(t, "echo", "after"); fmt.Sprint(got) != "[after]" {
		t.Errorf("echo ack = %v", got)
	}
	select {
	case e := <-from.events:
		t.Errorf("a socket outside %s got %v", room, e)
	default:
	}
}

// TestAnyEvent: an event of a name the targets do not serve (a script
// written for another service) is acknowledged with its arguments, after
// -ack-delay when set, and counted as received; binary arguments too on
// the transports that carry them.
func TestAnyEvent(t *testing.T) { forWebSocket(t, testAnyEvent) }

func testAnyEvent(t *testing.T, engine string) {
	const delay = 300 * time.Millisecond
	at := start(t, engine, socketio.Empty, nil)
	later := start(t, engine, socketio.Empty, func(c *config.Config) { c.SocketIO.AckDelay = delay })
	a := dial(t, at.url, "/", []string{"websocket"}, nil)
	if got := a.emitAck(t, "chat:message", "hi", map[string]any{"room": "lobby"}); fmt.Sprint(got) != "[hi map[room:lobby]]" {
		t.Errorf("chat:message ack = %v", got)
	}
	if got := a.emitAck(t, "trade_update"); fmt.Sprint(got) != "[]" {
		t.Errorf("trade_update ack without arguments = %v", got)
	}
	if err := a.Emit("no-ack", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three events received", func() bool { return at.metrics.Snapshot().MessagesReceived == 3 })

	b := dial(t, later.url, "/", []string{"websocket"}, nil)
	began := time.Now()
	if got := b.emitAck(t, "chat:message", "late"); fmt.Sprint(got) != "[late]" {
		t.Errorf("chat:message ack with -ack-delay = %v", got)
	}
	if took := time.Since(began); took < delay {
		t.Errorf("the ack came after %v, before -ack-delay %v", took, delay)
	}
	if got := b.emitAck(t, "echo", "own"); fmt.Sprint(got) != "[own]" {
		t.Errorf("echo ack = %v", got)
	}
}

// TestPath: with -path the targets serve Socket.IO there (a client's path
// option, as artillery's "/socket/socket.io/"), on every transport, and
// the default path gets the 404 that names the flag.
func TestPath(t *testing.T) { forWebSocket(t, testPath) }

func testPath(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.SocketIO.Path = "/socket/socket.io" })
	for name, transports := range transportsOn(engine) {
		conn, err := sioclient.Dial(sioclient.Options{URL: tg.url, Path: "/socket/socket.io/", Transport: strings.Join(transports, ",")})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = conn.Wait(ctx)
		cancel()
		if err != nil {
			t.Errorf("%s on /socket/socket.io/: %v", name, err)
		}
		_ = conn.Close()
	}
	code, body := httpDo(t, http.MethodGet, tg.url+"/socket.io/?EIO=4&transport=polling", "")
	if code != http.StatusNotFound || !strings.Contains(body, "/socket/socket.io/ (-path)") {
		t.Errorf("the default path answered %d %q, want 404 naming -path", code, body)
	}
}

// TestPush: with -push-interval every socket gets the -push-event event,
// numbered one by one and stamped with its send time, -push-size bytes of
// payload; with -push-rooms a socket gets the pushes of the rooms it
// joined (push-1 ...), each room numbered on its own.
func TestPush(t *testing.T) { forWebSocket(t, testPush) }

func testPush(t *testing.T, engine string) {
	tick := func(t *testing.T, c *client) map[string]any {
		t.Helper()
		e := c.nextEvent(t)
		if len(e) != 2 || e[0] != "quote" {
			t.Fatalf("event %v, want quote with one argument", e)
		}
		m, ok := e[1].(map[string]any)
		if !ok {
			t.Fatalf("push argument %T %v, want an object", e[1], e[1])
		}
		return m
	}
	all := start(t, engine, socketio.Empty, func(c *config.Config) {
		c.Broadcast.PushInterval, c.Broadcast.PushSize, c.SocketIO.PushEvent = 20*time.Millisecond, 8, "quote"
	})
	a := dial(t, all.url, "/", []string{"websocket"}, nil)
	first := tick(t, a)
	if first["payload"] != "xxxxxxxx" {
		t.Errorf("payload %v, want -push-size 8 bytes", first["payload"])
	}
	if sent := time.Unix(0, int64(first["sentAt"].(float64))); time.Since(sent) < 0 || time.Since(sent) > time.Minute {
		t.Errorf("sentAt %v is not a recent Unix time in nanoseconds", sent)
	}
	for prev, i := first["seq"].(float64), 0; i < 3; i++ {
		seq := tick(t, a)["seq"].(float64)
		if seq != prev+1 {
			t.Errorf("seq %v after %v, want one more", seq, prev)
		}
		prev = seq
	}

	rooms := start(t, engine, socketio.Empty, func(c *config.Config) {
		c.Broadcast.PushInterval, c.SocketIO.PushEvent, c.SocketIO.PushRooms = 20*time.Millisecond, "quote", 3
	})
	b := dial(t, rooms.url, "/", []string{"websocket"}, nil)
	if got := b.emitAck(t, "join", socketio.PushRoom(2)); fmt.Sprint(got) != "[push-2]" {
		t.Fatalf("join ack %v", got)
	}
	for range 3 {
		if m := tick(t, b); m["room"] != "push-2" {
			t.Errorf("a push of room %v reached a member of push-2 only", m["room"])
		}
	}
}

// TestNamespaces: any namespace a client names is made on its first
// CONNECT and served like "/", and counted by name; with -namespaces only
// "/" and those listed are, and another gets "Invalid namespace".
func TestNamespaces(t *testing.T) { forWebSocket(t, testNamespaces) }

func testNamespaces(t *testing.T, engine string) {
	anyNsp := start(t, engine, socketio.Empty, nil)
	for _, nsp := range []string{"/chat", "/chat", "/cobrowse"} {
		c := dial(t, anyNsp.url, nsp, []string{"websocket"}, nil)
		if got := c.emitAck(t, "echo", nsp); fmt.Sprint(got) != "["+nsp+"]" {
			t.Errorf("echo on %s = %v", nsp, got)
		}
	}
	waitFor(t, "the namespaces counted", func() bool {
		n := anyNsp.metrics.Snapshot().Namespaces
		return n["/chat"] == 2 && n["/cobrowse"] == 1
	})

	listed := start(t, engine, socketio.Empty, func(c *config.Config) { c.SocketIO.Namespaces = []string{"/chat"} })
	dial(t, listed.url, "/chat", []string{"websocket"}, nil)
	dial(t, listed.url, "/", []string{"websocket"}, nil)
	for _, nsp := range []string{"/cobrowse", "/custom"} {
		if _, err := connect(t, listed.url, nsp, []string{"websocket"}, nil); err == nil || !strings.Contains(err.Error(), "Invalid namespace") {
			t.Errorf("%s with -namespaces /chat: %v, want Invalid namespace", nsp, err)
		}
	}
}

package servers

// End-to-end tests: the knowngood binary as users run it, driven by the
// official JavaScript socket.io-client and by python-socketio.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/browser"
	"github.com/knowngood/knowngood/shared/prereq"
	"github.com/knowngood/knowngood/shared/protocol"
)

// binary is the knowngood binary the harness built, for the tests that run
// it themselves.
var binary string

func TestMain(m *testing.M) {
	var err error
	if binary, err = harness.Knowngood(); err != nil {
		fmt.Fprintln(os.Stderr, "building knowngood:", err)
		os.Exit(1)
	}
	code := m.Run()
	browser.Stop()
	harness.RemoveBuilds()
	os.Exit(code)
}

// server is a running knowngood process.
type server struct {
	*harness.Process
	url   string // http://127.0.0.1:PORT
	admin string // http://127.0.0.1:PORT
}

// startServer runs the binary on free loopback ports and stops it (SIGTERM,
// then SIGKILL) when the test ends.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	return startServerUnder(t, nil, args...)
}

// startServerUnder runs the binary through wrapper (prlimit ..., say).
func startServerUnder(t *testing.T, wrapper []string, args ...string) *server {
	t.Helper()
	p := harness.StartUnder(t, wrapper, args...)
	return &server{Process: p, url: "http://" + p.Addr, admin: p.AdminURL()}
}

func (s *server) log() string { return s.Log() }

// stats reads /stats on a kept-alive connection: at its open-files limit a
// target may not accept a new one (TestEMFILE).
func (s *server) stats(t *testing.T) protocol.Stats {
	t.Helper()
	return s.Stats(t)
}

// statsWith reads /stats through client.
func (s *server) statsWith(t *testing.T, client *http.Client) protocol.Stats {
	t.Helper()
	return s.StatsWith(t, client)
}

// need skips a test whose external client is missing, except in CI, where
// .ci/run has installed everything and a missing client is a failure.
func need(t *testing.T, what string, ok bool) {
	t.Helper()
	if !ok {
		prereq.Need(t, what, errors.New("not found"))
	}
}

func haveNodeClients() bool {
	_, err := os.Stat("../scripts/node_modules/socket.io-client/package.json")
	return err == nil
}

func havePythonSocketIO() bool {
	return exec.Command("/usr/bin/python3", "-c", "import socketio, aiohttp").Run() == nil
}

func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	env := func(string) string { return "" }
	cases := []struct {
		args        []string
		status      int
		out, errOut string
	}{
		{[]string{"-list"}, 0, "blocking", ""},
		{[]string{"-h"}, 0, "KG_VARIANT", ""},
		{[]string{"-h"}, 0, "SIGHUP", ""},
		{[]string{"-h"}, 0, "KG_IDLE_TIMEOUT", ""},
		{[]string{"-idle-timeout", "0s"}, 2, "", "invalid value for -idle-timeout: 0s"},
		{[]string{"-body-timeout", "soon"}, 2, "", "-body-timeout: want a duration"},
		{[]string{"-variant", "nope"}, 2, "", `invalid value for -variant: "nope"; want one of empty, async, blocking`},
		{[]string{"-delay", "soon"}, 2, "", `-delay: want a duration`},
		{[]string{"-variant", "echo-gnet", "-redis", "redis://127.0.0.1:6379/0"}, 2, "", `invalid value for -redis: variant echo-gnet has nothing to share`},
		{[]string{"-variant", "broadcast-gnet", "-redis", "redis://127.0.0.1:6379/0,redis://127.0.0.1:6380/0"}, 2, "", `variant broadcast-gnet takes one`},
		{[]string{"-variant", "echo-tcp", "-redis", "redis://127.0.0.1:6379/0"}, 2, "", `-redis is for the broadcast and Socket.IO variants`},
		{[]string{"-variant", "broadcast-gnet", "-redis", "127.0.0.1:6379"}, 2, "", `invalid value for -redis: "127.0.0.1:6379"`},
		{[]string{"-variant", "empty", "-addr", "127.0.0.1:99999"}, 2, "", `invalid value for -addr: "127.0.0.1:99999": port 99999 out of range`},
		{[]string{"-version"}, 0, "knowngood ", ""},
		{[]string{"-engine", "node"}, 2, "", `invalid value for -engine: "node"; want zishang520, native or native-gnet`},
		{[]string{"-engine", "native", "-redis", "127.0.0.1:6379"}, 2, "", `invalid value for -redis: "127.0.0.1:6379"`},
		{[]string{"-native-lib", "gnet"}, 2, "", `invalid value "gnet" for flag -native-lib: removed: -engine says it now; -native-lib gnet is -engine native-gnet`},
		{[]string{"-engine", "native-gnet", "-transports", "polling"}, 2, "", `invalid value for -transports: native-gnet serves WebSocket sessions only`},
		{[]string{"-variant", "blocking", "-engine", "native-gnet"}, 2, "", `invalid value for -engine: native-gnet cannot serve blocking, whose connects freeze the server's one loop; use -engine native`},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		if got := run(c.args, env, &out, &errOut); got != c.status {
			t.Errorf("%v: status %d, want %d; stderr %s", c.args, got, c.status, errOut.String())
		}
		if !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.errOut) {
			t.Errorf("%v: stdout %q, stderr %q; want %q and %q", c.args, out.String(), errOut.String(), c.out, c.errOut)
		}
	}
}

// sioEngines are the Socket.IO engines (-engine) each Socket.IO test here
// runs on: the two must behave the same.
var sioEngines = []string{"zishang520", "native"}

// forEngines runs test once on each engine, as a subtest named after it.
// The subtests run beside each other and beside the package's other tests
// (t.Parallel): each starts a target of its own on free ports, and the
// end-to-end tests spend most of their time waiting on clients, so the
// package takes a fraction of the sum of its tests.
func forEngines(t *testing.T, test func(t *testing.T, engine string)) {
	t.Parallel()
	for _, engine := range sioEngines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			test(t, engine)
		})
	}
}

// TestSIGTERM: a connected client gets a Socket.IO DISCONNECT, and the
// process exits with status 0 within -shutdown-timeout.
func TestSIGTERM(t *testing.T) { forWebSocketEngines(t, testSIGTERM) }

func testSIGTERM(t *testing.T, engine string) {
	s := startServer(t, append(engineFlags(engine), "-variant", "empty", "-shutdown-timeout", "3s")...)
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.url, "http")+"/socket.io/?EIO=4&transport=websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, _ = conn.ReadMessage() // open
	_ = conn.WriteMessage(websocket.TextMessage, []byte("40"))
	_, _, _ = conn.ReadMessage() // CONNECT ack

	began := time.Now()
	_ = s.Signal(syscall.SIGTERM)
	_, msg, err := conn.ReadMessage()
	if err != nil || string(msg) != "41" {
		t.Errorf("after SIGTERM the client got %q, %v; want a DISCONNECT (41)", msg, err)
	}
	s.exitsWithin(t, began, 3*time.Second)
}

// TestSIGHUP: SIGHUP (the terminal that started the target went away) is
// a graceful shutdown like SIGTERM: a WebSocket client gets 1001, the
// process logs the signal by name and exits with status 0 within
// -shutdown-timeout.
func TestSIGHUP(t *testing.T) {
	t.Parallel()
	s := startServer(t, "-variant", "echo-gorilla", "-shutdown-timeout", "3s")
	conn, _, err := websocket.DefaultDialer.Dial(echoURL(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	gone := make(chan error, 1)
	go func() { _, _, err := conn.ReadMessage(); gone <- err }()
	echoSettle(t, s, func(st protocol.Stats) bool { return st.ConnectionsActive == 1 })

	began := time.Now()
	_ = s.Signal(syscall.SIGHUP)
	var ce *websocket.CloseError
	if err := <-gone; !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("after SIGHUP the client got %v, want close 1001", err)
	}
	s.exitsWithin(t, began, 3*time.Second)
	if !strings.Contains(s.log(), `"msg":"shutting down"`) || !strings.Contains(s.log(), `"signal":"SIGHUP"`) {
		t.Errorf("no log line naming SIGHUP:\n%s", s.log())
	}
}

// exitsWithin checks that the process, sent SIGTERM at began, exited with
// status 0 within timeout (its -shutdown-timeout) and logged "stopped".
func (s *server) exitsWithin(t *testing.T, began time.Time, timeout time.Duration) {
	t.Helper()
	select {
	case <-s.Exited():
		if err := s.ExitErr(); err != nil {
			t.Errorf("exit: %v\n%s", err, s.log())
		}
	case <-time.After(timeout + 2*time.Second):
		t.Fatalf("still running %v after SIGTERM (-shutdown-timeout %v)", timeout+2*time.Second, timeout)
	}
	if took := time.Since(began); took > timeout {
		t.Errorf("exited %v after SIGTERM, want within -shutdown-timeout %v", took, timeout)
	}
	if !strings.Contains(s.log(), `"msg":"stopped"`) {
		t.Errorf("no \"stopped\" log line:\n%s", s.log())
	}
}

// TestJSClient: 500 official socket.io-client v4 clients at once against
// empty and async, over WebSocket alone and over polling with upgrade:
// every one connects and gets its echo ack back, and the server counts
// exactly 500 completed handshakes.
//
// One exception, measured and documented (servers/README.md, where
// -engine native differs): on a busy machine the default engine loses
// about one session in 1,000 over polling with upgrade, a CONNECT ack or
// an echo ack sent around the upgrade never reaching the client, though
// the server counted the handshake. That case may miss up to
// lostUpgrades, and says so in the log; the native engines may miss none.
// It runs alone, one engine after another, before the parallel tests: it
// is a load of its own (500 polling sessions upgrading at once).
func TestJSClient(t *testing.T) {
	for _, engine := range append(slices.Clone(sioEngines), nativeGnet) {
		t.Run(engine, func(t *testing.T) { testJSClient(t, engine) })
	}
}

// lostUpgrades bounds what the default engine may lose of 500 sessions
// over polling with upgrade: 2%. Measured: 1 of 500 in three runs of
// three, and 6 of 500 once in a clean-clone `make test` with the other
// packages' tests running alongside (the loss grows with the load).
const lostUpgrades = 10

func testJSClient(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	const n = 500
	for _, variant := range []string{"empty", "async"} {
		s := startServer(t, append(engineFlags(engine), "-variant", variant)...)
		for _, transports := range transportsOn(engine, "websocket", "polling,websocket") {
			before := s.stats(t)
			r := harness.SioConnect(t, "js", "--url", s.url, "--n", fmt.Sprint(n), "--transports", transports, "--deadline-ms", "15000", "--echo")
			d := protocol.Diff(before, s.stats(t))
			t.Logf("%s %s: %d connected, %d echoed, p50 %.1f ms, max %.1f ms; server ok %d, p99 %.1f ms, disconnects %v",
				variant, transports, r.Connected, r.Echoed, r.P50, r.Max, d.Handshakes["ok"], d.HandshakeLatency.P99*1000, d.Disconnects)
			mayLose := 0
			if engine == "zishang520" && transports == "polling,websocket" {
				mayLose = lostUpgrades
			}
			if r.Echoed < n-mayLose { // an echo comes only from a connected client
				t.Errorf("%s over %s: %d of %d connected, %d echoed; errors %v, echo errors %v", variant, transports, r.Connected, n, r.Echoed, r.Errors, r.EchoErrors)
			} else if r.Echoed < n {
				t.Logf("%s over %s: %d lost around the upgrade, a known loss of this engine; errors %v, echo errors %v", variant, transports, n-r.Echoed, r.Errors, r.EchoErrors)
			}
			if d.Handshakes["ok"] != n {
				t.Errorf("%s over %s: server completed %d handshakes, want %d (%v)", variant, transports, d.Handshakes["ok"], n, d.Handshakes)
			}
		}
	}
}

// TestJSClientPath: the official client with its path option set, as an
// artillery script's path: "/socket/socket.io/", and a namespace of its
// own (/cobrowse, which the target makes on the first CONNECT), connects
// to a target started with the same -path, over WebSocket and over
// polling with the upgrade, and echoes; the target counts the namespace.
func TestJSClientPath(t *testing.T) { forWebSocketEngines(t, testJSClientPath) }

func testJSClientPath(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	const n = 20
	s := startServer(t, append(engineFlags(engine), "-variant", "empty", "-path", "/socket/socket.io/")...)
	for _, transports := range transportsOn(engine, "websocket", "polling,websocket") {
		r := harness.SioConnect(t, "js", "--url", s.url, "--path", "/socket/socket.io/", "--namespace", "/cobrowse", "--n", fmt.Sprint(n), "--transports", transports, "--deadline-ms", "15000", "--echo")
		if r.Echoed != n {
			t.Errorf("over %s on -path, namespace /cobrowse: %d of %d connected, %d echoed; errors %v", transports, r.Connected, n, r.Echoed, r.Errors)
		}
	}
	if got := s.stats(t).Namespaces["/cobrowse"]; got != uint64(n*len(transportsOn(engine, "websocket", "polling,websocket"))) {
		t.Errorf("namespace_connects{/cobrowse} = %d, want one per client", got)
	}
}

// TestJSClientPush: the official client listening for the timed push
// (scripts/clients/sio-push.mjs) gets every push, in each room's order,
// with its latency from the server's sentAt: ten sockets in one of two
// push rooms, one push every 50 ms.
func TestJSClientPush(t *testing.T) { forWebSocketEngines(t, testJSClientPush) }

func testJSClientPush(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	s := startServer(t, append(engineFlags(engine), "-variant", "empty", "-push-interval", "50ms", "-push-rooms", "2", "-push-event", "quote")...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "../scripts/clients/sio-push.mjs", "--url", s.url, "--n", "10", "--room", "push-2", "--event", "quote", "--duration-ms", "1000").Output()
	if err != nil {
		t.Fatalf("sio-push.mjs: %v", err)
	}
	var r struct {
		Connected, Received, Missed int
		P50Ms, P99Ms                float64
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("sio-push.mjs printed %q: %v", out, err)
	}
	t.Logf("%s: %+v", engine, r)
	if r.Connected != 10 || r.Received == 0 || r.Missed != 0 || r.P50Ms <= 0 {
		t.Errorf("%+v: want 10 connected, pushes received, none missed, a latency", r)
	}
}

// TestBinaryJSClient: the official client's binary events and acks
// (Buffers nested in the arguments, one starting with the byte of a
// CONNECT packet) come back byte for byte, over WebSocket, over polling
// (base64) and across the upgrade.
func TestBinaryJSClient(t *testing.T) { forWebSocketEngines(t, testBinaryJSClient) }

func testBinaryJSClient(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	s := startServer(t, append(engineFlags(engine), "-variant", "empty")...)
	for _, transports := range transportsOn(engine, "websocket", "polling", "polling,websocket") {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, "node", "../scripts/clients/sio-binary.mjs", "--url", s.url, "--transports", transports).Output()
		cancel()
		var r struct{ Cases map[string]string }
		if err != nil || json.Unmarshal(bytes.TrimSpace(out), &r) != nil {
			t.Fatalf("sio-binary over %s: %v, %q", transports, err, out)
		}
		for name, result := range r.Cases {
			if result != "ok" {
				t.Errorf("over %s: %s: %s", transports, name, result)
			}
		}
		if len(r.Cases) < 3 {
			t.Errorf("over %s: ran %v, want the three cases", transports, r.Cases)
		}
	}
}

// TestPythonClient: 200 python-socketio AsyncClients at once against empty.
func TestPythonClient(t *testing.T) { forWebSocketEngines(t, testPythonClient) }

func testPythonClient(t *testing.T, engine string) {
	need(t, "python3-socketio for /usr/bin/python3", havePythonSocketIO())
	const n = 200
	s := startServer(t, append(engineFlags(engine), "-variant", "empty")...)
	for _, transports := range transportsOn(engine, "websocket", "polling") {
		before := s.stats(t)
		r := harness.SioConnect(t, "python", "--url", s.url, "--n", fmt.Sprint(n), "--transports", transports, "--deadline-ms", "15000", "--echo")
		d := protocol.Diff(before, s.stats(t))
		t.Logf("python-socketio %s over %s: %d connected, %d echoed; server ok %d", r.Version, transports, r.Connected, r.Echoed, d.Handshakes["ok"])
		if r.Connected != n || r.Echoed != n || d.Handshakes["ok"] != n {
			t.Errorf("over %s: %d of %d connected, %d echoed, server ok %d; errors %v", transports, r.Connected, n, r.Echoed, d.Handshakes["ok"], r.Errors)
		}
	}
}

// TestMaxConnsWithJSClient: over -max-conns the server answers 503 before
// any upgrade, the client sees the failures, and the server counts each as
// rejected, so that both sides' figures reconcile.
func TestMaxConnsWithJSClient(t *testing.T) { forWebSocketEngines(t, testMaxConnsWithJSClient) }

func testMaxConnsWithJSClient(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	s := startServer(t, append(engineFlags(engine), "-variant", "empty", "-max-conns", "20")...)
	before := s.stats(t)
	r := harness.SioConnect(t, "js", "--url", s.url, "--n", "50", "--transports", "websocket", "--deadline-ms", "10000")
	d := protocol.Diff(before, s.stats(t))
	if r.Connected != 20 || r.Failed != 30 {
		t.Errorf("client: %d connected, %d failed; want 20 and 30 (errors %v)", r.Connected, r.Failed, r.Errors)
	}
	if d.Handshakes["ok"] != 20 || d.Handshakes["rejected"] != 30 || d.MaxConnsRefused != 30 {
		t.Errorf("server: %v, %d refused at the cap; want 20 ok and 30 rejected, all 30 at the cap", d.Handshakes, d.MaxConnsRefused)
	}
}

// TestBlockingCurveJS checks the node model's curve from the official JS
// client's side: with N connects at once, the k-th completes about
// (k-1) x delay after the first, and a client whose deadline T is shorter
// than N x delay sees about T / delay of them succeed, never more. (The
// asyncio model's, whose acks of a burst leave together, is checked beside
// python-socketio in scripts/experiments/handshake. gnet refuses blocking.)
//
// The band: the loop completes one connect per delay at the least, so at
// the server the k-th comes >= (k-1) x delay after the first; the client
// adds only its own lateness in seeing each, which does not add up from
// one connect to the next. The margin is half a delay plus the longest
// the client's event loop was held up (loop_delay_max_ms): on a machine
// busy enough to starve the client, its lateness is measured, not assumed.
//
// The upper bound on the count holds however slow the client is: the
// loop cannot complete more than T / delay in T. The lower bound is
// loose and counts from the client's first connect, for a client slow to
// open its connections: from there the loop completes one a delay.
func TestBlockingCurveJS(t *testing.T) { forEngines(t, testBlockingCurveJS) }

func testBlockingCurveJS(t *testing.T, engine string) {
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	const delay = 50.0 // ms
	s := startServer(t, append(engineFlags(engine), "-variant", "blocking", "-blocking-model", "node", "-delay", "50ms")...)

	r := harness.SioConnect(t, "js", "--url", s.url, "--n", "20", "--transports", "websocket", "--deadline-ms", "15000", "--times")
	if r.Connected != 20 || len(r.TimesMS) != 20 {
		t.Fatalf("%d of 20 connected (%d times); errors %v", r.Connected, len(r.TimesMS), r.Errors)
	}
	margin := delay/2 + r.LoopDelayMax
	t.Logf("completion times (ms): %v; client loop held up %.1f ms at most, margin %.1f ms", r.TimesMS, r.LoopDelayMax, margin)
	for k := 1; k < 20; k++ {
		if gap, want := r.TimesMS[k]-r.TimesMS[0], float64(k)*delay-margin; gap < want {
			t.Errorf("connect %d completed %.1f ms after the first, want >= %.1f", k+1, gap, want)
		}
	}

	const n, deadline = 40, 1000.0
	before := s.stats(t)
	r = harness.SioConnect(t, "js", "--url", s.url, "--n", fmt.Sprint(n), "--transports", "websocket", "--deadline-ms", fmt.Sprint(deadline), "--times")
	predicted := int(deadline / delay)
	least := 0
	if len(r.TimesMS) > 0 {
		least = int((deadline-r.TimesMS[0]-r.LoopDelayMax)/delay) / 2
	}
	t.Logf("N=%d, deadline %.0f ms: %d connected, predicted %d, the first after %v ms, client loop held up %.1f ms at most",
		n, deadline, r.Connected, predicted, r.TimesMS[:min(1, len(r.TimesMS))], r.LoopDelayMax)
	if r.Connected > predicted+1 || r.Connected < least {
		t.Errorf("%d of %d connected within %.0f ms, want about %d (at most %d, at least %d)", r.Connected, n, deadline, predicted, predicted+1, least)
	}
	// The server's view: the ones the client gave up on left while queued.
	waitForStats(t, s, func(d protocol.Stats) bool {
		return d.Handshakes["ok"]+d.Handshakes["abandoned"] == n
	}, before)
}

// waitForStats polls /stats until cond holds for the diff since before.
func waitForStats(t *testing.T, s *server, cond func(protocol.Stats) bool, before protocol.Stats) {
	t.Helper()
	var d protocol.Stats
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if d = protocol.Diff(before, s.stats(t)); cond(d) {
			return
		}
	}
	t.Errorf("server stats never matched: handshakes %v, tls failures %v", d.Handshakes, d.TLSFailures)
}

package servers

// Legacy clients: socket.io-client 2 (Engine.IO v3, Socket.IO v2) against
// the Socket.IO targets on each engine with and without -allow-eio3, and
// python-socketio (Engine.IO v4 only) with the flag on.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/protocol"
)

func haveLegacyJSClient() bool {
	_, err := os.Stat("../scripts/node_modules/socket.io-client-v2/package.json")
	return err == nil
}

// legacyTransports are the ways socket.io-client 2 is run: WebSocket
// alone, polling alone, and polling then the upgrade.
var legacyTransports = []string{"websocket", "polling", "polling,websocket"}

// legacyRun is one run of socket.io-client 2 in TestLegacyJSClient.
type legacyRun struct {
	namespace string
	payload   []string
}

// legacyRuns: a string and a binary echo on "/" (joined at the open, as
// Socket.IO v2 has no CONNECT for it), and a binary one on /custom
// (joined by the client's CONNECT).
var legacyRuns = []legacyRun{
	{"/", []string{"--echo"}},
	{"/", []string{"--echo", "--binary"}},
	{"/custom", []string{"--echo", "--binary"}},
}

// legacyDelay is the connect's -delay of a model in these tests. The v3
// client pings the server, which on blocking answers only in its turn on
// the frozen loop, after a burst of 80 holds (40 clients, two namespaces
// each), and the engines' ping timers are not frozen: 2 ms each keeps the
// burst well inside the ping timeout, as a service with such a handler
// would need to.
func legacyDelay(variant string) time.Duration {
	if variant == "blocking" {
		return 2 * time.Millisecond
	}
	return 20 * time.Millisecond
}

// legacyRunsOf is the runs for a connect model. The connect model decides
// how "/" and /custom are joined, not how an echo is coded, so the models
// that hold the connect (async, blocking) each join both namespaces, and
// the binary echo on "/" runs on the empty model only: on the other two it
// added a client run per transport that tested nothing the empty model's
// does not.
func legacyRunsOf(variant string) []legacyRun {
	if variant == "empty" {
		return legacyRuns
	}
	return []legacyRun{legacyRuns[0], legacyRuns[2]}
}

// TestLegacyJSClient: with -allow-eio3, every connect model on each engine
// serves socket.io-client 2 as it serves v4, over each transport the
// engine offers: all connect, on / and on /custom, a string and a binary
// echo (see legacyRunsOf) come back in the ack after the connections were held through four
// ping intervals (the v3 client pings, the server answers; each side gives
// the other five seconds over the interval, the margin for a machine busy
// with the other tests beside it: an upgrade holds the v3 client's pings
// from its probe until the server has its upgrade packet, and 40 clients
// upgrading at once in one Node process took more than two seconds
// beside the suite's other packages),
// and the server counts each connect as one ok handshake whose time
// includes the connect's -delay. A v4 client on the same target still
// connects.
func TestLegacyJSClient(t *testing.T) { forWebSocketEngines(t, testLegacyJSClient) }

func testLegacyJSClient(t *testing.T, engine string) {
	need(t, "socket.io-client 2 (scripts/node_modules)", haveLegacyJSClient())
	for _, variant := range []string{"empty", "async", "blocking"} {
		if variant == "blocking" && engine == nativeGnet {
			continue // gnet refuses blocking: its loops must never block
		}
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, append(engineFlags(engine), "-variant", variant, "-allow-eio3", "-delay", legacyDelay(variant).String(),
				"-ping-interval", "250ms", "-ping-timeout", "5s")...)
			for _, transports := range transportsOn(engine, legacyTransports...) {
				for _, run := range legacyRunsOf(variant) {
					checkLegacyRun(t, s, variant, transports, run)
				}
			}
			r := harness.SioConnect(t, "js", "--url", s.url, "--n", "10", "--transports", transportsOn(engine, "polling,websocket")[0],
				"--deadline-ms", "15000", "--echo", "--binary")
			if r.Connected != 10 || r.Echoed != 10 {
				t.Errorf("%s with -allow-eio3: socket.io-client %s: %d of 10 connected, %d echoed; errors %v", variant, r.Version, r.Connected, r.Echoed, r.Errors)
			}
		})
	}
}

func checkLegacyRun(t *testing.T, s *server, variant, transports string, run legacyRun) {
	t.Helper()
	const n = 40
	delay := legacyDelay(variant).Seconds()
	before := s.stats(t)
	r := harness.SioConnect(t, "js", append([]string{"--client", "v2", "--url", s.url, "--n", fmt.Sprint(n), "--transports", transports,
		"--namespace", run.namespace, "--deadline-ms", "15000", "--hold-ms", "1000"}, run.payload...)...)
	// A polling client that exits leaves its sessions to end by ping
	// timeout later, on every engine as on Node's: those counted when the
	// client is done ended while held.
	held := protocol.Diff(before, s.stats(t))
	d := s.Settled(t, before)
	what := fmt.Sprintf("%s over %s on %s (%s)", variant, transports, run.namespace, run.payload)
	t.Logf("%s: %d connected, %d echoed; server ok %d, p50 %.1f ms, disconnects %v",
		what, r.Connected, r.Echoed, d.Handshakes["ok"], d.HandshakeLatency.P50*1000, d.Disconnects)
	if r.Connected != n || r.Echoed != n {
		t.Errorf("%s: %d of %d connected, %d echoed; errors %v", what, r.Connected, n, r.Echoed, r.Errors)
	}
	if d.Handshakes["ok"] != n || d.HandshakeLatency.Count != n {
		t.Errorf("%s: server counted %v, %d timed; want %d ok", what, d.Handshakes, d.HandshakeLatency.Count, n)
	}
	if held.Disconnects["ping timeout"] != 0 {
		t.Errorf("%s: %d sessions ended by ping timeout while held", what, held.Disconnects["ping timeout"])
	}
	if variant != "empty" && d.HandshakeLatency.P50 < delay {
		t.Errorf("%s: handshake p50 %.1f ms, want at least the connect's -delay (%.0f ms)", what, d.HandshakeLatency.P50*1000, delay*1000)
	}
}

// TestLegacyJSClientRefused: without -allow-eio3, on each engine, an
// Engine.IO v3 open request gets Node's answer, 400 {"code":5,"message":
// "Unsupported protocol version"} (the native engine answers an upgrade
// 400 with the bare message, the text Node writes after its 101), before
// any upgrade, and socket.io-client 2 reports a
// connect_error at once on each attempt, over either transport, with the
// same message as against Node's socket.io 4, instead of waiting out its
// deadline. Its default is to retry forever; the client here retries
// twice, so each connection makes 3 attempts, and the server counts each
// as a failed handshake and logs the first, naming the flag.
func TestLegacyJSClientRefused(t *testing.T) { forWebSocketEngines(t, testLegacyJSClientRefused) }

func testLegacyJSClientRefused(t *testing.T, engine string) {
	need(t, "socket.io-client 2 (scripts/node_modules)", haveLegacyJSClient())
	const n, attempts, deadline = 10, 3, 30000.0
	s := startServer(t, append(engineFlags(engine), "-variant", "empty")...)
	node := startNode(t)
	if status, body := openEIO3(t, node.url, "polling"); status != http.StatusBadRequest || body != unsupportedProtocol {
		t.Errorf("Node's socket.io answers an EIO=3 open %d %s; the test expects 400 %s", status, body, unsupportedProtocol)
	}
	for _, transport := range transportsOn(engine, "polling", "websocket") {
		want := unsupportedProtocol
		if transport == "websocket" && engine != "zishang520" {
			want = "Unsupported protocol version"
		}
		if status, body := openEIO3(t, s.url, transport); status != http.StatusBadRequest || body != want {
			t.Errorf("EIO=3 open over %s: %d %s; want 400 %s", transport, status, body, want)
		}
	}
	for _, transports := range transportsOn(engine, legacyTransports...) {
		before := s.stats(t)
		r := harness.SioConnect(t, "js", "--client", "v2", "--url", s.url, "--n", fmt.Sprint(n), "--transports", transports,
			"--deadline-ms", fmt.Sprint(deadline), "--reconnect", fmt.Sprint(attempts-1))
		d := s.Settled(t, before)
		t.Logf("over %s: errors %v, attempts %v, http %v, in %.0f ms; server %v", transports, r.Errors, r.AttemptErrors, r.HTTPErrors, r.Total, d.Handshakes)
		if r.Connected != 0 || r.Errors["deadline exceeded"] != 0 || r.Total >= deadline {
			t.Errorf("over %s: %d connected, errors %v after %.0f ms; want every connection failed by connect_error", transports, r.Connected, r.Errors, r.Total)
		}
		if got := sum(r.AttemptErrors); got != n*attempts {
			t.Errorf("over %s: %d connect_errors %v, want %d", transports, got, r.AttemptErrors, n*attempts)
		}
		if d.Handshakes["failed"] != n*attempts || d.Handshakes["ok"] != 0 {
			t.Errorf("over %s: server counted %v, want %d failed", transports, d.Handshakes, n*attempts)
		}
		fromNode := harness.SioConnect(t, "js", "--client", "v2", "--url", node.url, "--n", "1", "--transports", transports, "--deadline-ms", fmt.Sprint(deadline))
		for msg := range fromNode.Errors {
			if r.Errors[msg] != n {
				t.Errorf("over %s: the client reports %v, and %q against Node", transports, r.Errors, msg)
			}
		}
	}
	if !strings.Contains(s.log(), "-allow-eio3") {
		t.Errorf("no log line names -allow-eio3:\n%s", s.log())
	}
}

// startNode runs Node's socket.io 4 reference server (scripts/node) on a
// free loopback port until the test ends.
func startNode(t *testing.T) *server {
	t.Helper()
	return startNodeScript(t, nil, "sio-server.mjs", "0")
}

// startNodeScript runs one of the Node reference servers
// (scripts/node/SCRIPT) with args and the environment settings env until
// the test ends.
func startNodeScript(t *testing.T, env []string, script string, args ...string) *server {
	t.Helper()
	argv := slices.Concat([]string{"env"}, env, []string{"node", "../scripts/node/" + script}, args)
	p, err := harness.StartProcess(context.Background(), "node "+script, argv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return &server{Process: p, url: "http://" + p.Addr}
}

// unsupportedProtocol is Node's engine.io answer to a v3 open request.
const unsupportedProtocol = `{"code":5,"message":"Unsupported protocol version"}`

// openEIO3 sends an Engine.IO v3 open request, a GET or a WebSocket
// upgrade, and returns the answer's status and body.
func openEIO3(t *testing.T, url, transport string) (int, string) {
	t.Helper()
	query := "/socket.io/?EIO=3&transport=" + transport
	var resp *http.Response
	var err error
	if transport == "websocket" {
		var conn *websocket.Conn
		conn, resp, err = websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+query, nil)
		if err == nil {
			conn.Close()
			return http.StatusSwitchingProtocols, ""
		}
	} else {
		resp, err = http.Get(url + query)
	}
	if resp == nil {
		t.Fatalf("EIO=3 open over %s: %v", transport, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func sum(counts map[string]int) int {
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// TestPythonClientWithEIO3: python-socketio speaks Engine.IO v4 only; a
// target run with -allow-eio3 serves it as one run without.
func TestPythonClientWithEIO3(t *testing.T) {
	t.Parallel()
	need(t, "python3-socketio for /usr/bin/python3", havePythonSocketIO())
	const n = 50
	s := startServer(t, "-variant", "empty", "-allow-eio3")
	for _, transports := range []string{"websocket", "polling"} {
		before := s.stats(t)
		r := harness.SioConnect(t, "python", "--url", s.url, "--n", fmt.Sprint(n), "--transports", transports, "--deadline-ms", "15000", "--echo")
		d := protocol.Diff(before, s.stats(t))
		if r.Connected != n || r.Echoed != n || d.Handshakes["ok"] != n {
			t.Errorf("over %s: %d of %d connected, %d echoed, server ok %d; errors %v", transports, r.Connected, n, r.Echoed, d.Handshakes["ok"], r.Errors)
		}
	}
}

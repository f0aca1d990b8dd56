// Package recipes tests the recipes under scripts/ for external load tools
// (k6, artillery, tsung, wscat, python-socketio, the JS socket.io-client and
// ws): each runs against a fresh knowngood target, and the server's /stats
// diff must show what the tool claims. The tests run side by side: each
// has its own target on free ports, and what it checks is that target's
// own counters, which no other test's traffic reaches.
package recipes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/leaktest"
	"github.com/knowngood/knowngood/shared/prereq"
	"github.com/knowngood/knowngood/shared/protocol"
)

func TestMain(m *testing.M) {
	if _, err := harness.Knowngood(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	leaktest.Main(m, harness.RemoveBuilds)
}

// run runs a recipe's command from scripts/ (2 minutes at most) and
// returns its stdout; a non-zero exit fails the test.
func run(t *testing.T, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s\n%s", name, args, err, out, stderr.String())
	}
	return out
}

// k6 finds k6 v1.8.1 on PATH or in GOPATH/bin (make deps installs it there).
func k6(t *testing.T) string {
	for _, p := range []string{"k6", filepath.Join(gopath(), "bin", "k6")} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	prereq.Need(t, "k6 (go install go.k6.io/k6@v1.8.1)", fmt.Errorf("not on PATH nor in %s/bin", gopath()))
	return ""
}

func gopath() string {
	out, _ := exec.Command("go", "env", "GOPATH").Output()
	return string(bytes.TrimSpace(out))
}

// k6Summary is the part of k6's --summary-export that the tests read.
type k6Summary struct {
	Metrics map[string]struct {
		Count  float64 `json:"count"`
		Passes float64 `json:"passes"`
		Fails  float64 `json:"fails"`
	} `json:"metrics"`
}

func runK6(t *testing.T, script string, env ...string) k6Summary {
	summary := filepath.Join(t.TempDir(), "summary.json")
	args := []string{"run", "--quiet", "--no-usage-report", "--summary-export", summary}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	run(t, nil, k6(t), append(args, script)...)
	var s k6Summary
	raw, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestK6WebSocketEcho(t *testing.T) {
	t.Parallel()
	k6(t)
	tg := harness.Start(t, "-variant", "echo-gorilla")
	before := tg.Stats(t)
	s := runK6(t, "k6/ws-echo.js", "TARGET=ws://"+tg.Addr+"/", "VUS=5", "ITERATIONS=20", "MESSAGES=10")
	d := tg.Settled(t, before)
	sessions, sent := uint64(s.Metrics["ws_sessions"].Count), uint64(s.Metrics["ws_msgs_sent"].Count)
	if sessions != 20 || sent != 200 || s.Metrics["checks"].Fails != 0 {
		t.Errorf("k6: %d sessions, %d messages sent, %v checks failed; want 20, 200, 0", sessions, sent, s.Metrics["checks"].Fails)
	}
	if d.ConnectionsTotal != sessions || d.MessagesReceived != sent || d.MessagesSent != uint64(s.Metrics["ws_msgs_received"].Count) {
		t.Errorf("k6 claims %d sessions, %d sent, %v received; the server saw %d connections, %d received, %d sent",
			sessions, sent, s.Metrics["ws_msgs_received"].Count, d.ConnectionsTotal, d.MessagesReceived, d.MessagesSent)
	}
}

// sioEngines are the Socket.IO engines a recipe runs against: every
// client that works with the library's targets must work with the
// project's own engine unchanged.
var sioEngines = []struct {
	name  string
	flags []string
	ws    bool // WebSocket only (the gnet transport serves no polling)
}{
	{"zishang520", []string{"-engine", "zishang520"}, false},
	{"native", []string{"-engine", "native"}, false},
	{"native-gnet", []string{"-engine", "native-gnet"}, true},
}

func TestK6SocketIO(t *testing.T) {
	t.Parallel()
	k6(t)
	for _, e := range sioEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			testK6SocketIO(t, e.flags)
		})
	}
}

func testK6SocketIO(t *testing.T, engine []string) {
	tg := harness.Start(t, append([]string{"-variant", "async", "-delay", "20ms"}, engine...)...)
	before := tg.Stats(t)
	s := runK6(t, "k6/socketio.js", "TARGET=http://"+tg.Addr, "VUS=5", "ITERATIONS=20", "EMITS=5")
	d := tg.Settled(t, before)
	connected, acks := uint64(s.Metrics["sio_connected"].Count), uint64(s.Metrics["sio_acks_matched"].Count)
	if connected != 20 || acks != 100 || s.Metrics["checks"].Fails != 0 {
		t.Errorf("k6: %d connected, %d acks, %v checks failed; want 20, 100, 0", connected, acks, s.Metrics["checks"].Fails)
	}
	if d.Handshakes[protocol.ResultOK] != connected || d.HandshakesByTransport["websocket"][protocol.ResultOK] != connected ||
		d.MessagesReceived != acks || d.MessagesSent != acks {
		t.Errorf("k6 claims %d connected, %d acks; the server saw %v handshakes (%v by transport), %d events in, %d out",
			connected, acks, d.Handshakes, d.HandshakesByTransport, d.MessagesReceived, d.MessagesSent)
	}
}

// TestK6SocketIOPathNamespace: the k6 recipe on a custom path and namespace
// (SIO_PATH, NAMESPACE) against a target started with that -path: every
// connect lands on the namespace, every ack matches, on each engine.
func TestK6SocketIOPathNamespace(t *testing.T) {
	t.Parallel()
	k6(t)
	for _, e := range sioEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			tg := harness.Start(t, append([]string{"-variant", "empty", "-path", "/socket/socket.io/"}, e.flags...)...)
			before := tg.Stats(t)
			s := runK6(t, "k6/socketio.js", "TARGET=http://"+tg.Addr, "SIO_PATH=/socket/socket.io/", "NAMESPACE=/cobrowse", "VUS=2", "ITERATIONS=10", "EMITS=3")
			d := tg.Settled(t, before)
			connected, acks := uint64(s.Metrics["sio_connected"].Count), uint64(s.Metrics["sio_acks_matched"].Count)
			if connected != 10 || acks != 30 || s.Metrics["checks"].Fails != 0 {
				t.Errorf("k6: %d connected, %d acks, %v checks failed; want 10, 30, 0", connected, acks, s.Metrics["checks"].Fails)
			}
			if d.Namespaces["/cobrowse"] != connected || d.MessagesReceived != acks {
				t.Errorf("k6 claims %d connected, %d acks; the server saw namespaces %v, %d events in", connected, acks, d.Namespaces, d.MessagesReceived)
			}
		})
	}
}

// artillery runs a recipe of scripts/artillery and returns its aggregate
// counters.
func artillery(t *testing.T, script, target string) map[string]uint64 {
	_, err := os.Stat("../artillery/node_modules/artillery/package.json")
	prereq.Need(t, "artillery (npm ci in scripts/artillery)", err)
	out := filepath.Join(t.TempDir(), "report.json")
	env := append([]string{"ARTILLERY_DISABLE_TELEMETRY=true"}, telemetrySink(t)...)
	run(t, env, "artillery/node_modules/.bin/artillery", "run", "--quiet", "--target", target, "--output", out, "artillery/"+script)
	var r struct {
		Aggregate struct {
			Counters map[string]uint64 `json:"counters"`
		} `json:"aggregate"`
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r.Aggregate.Counters
}

// telemetrySink is the environment that sends artillery's exit-time
// telemetry to a local server answering 200. Artillery 2 posts an
// anonymized event to app.posthog.com when it exits even with
// ARTILLERY_DISABLE_TELEMETRY, and where that host cannot be reached its
// client (posthog-node, on axios) tries 4 times 3 s apart: 12 s of every
// run spent after the report is written. axios takes HTTPS_PROXY from
// the environment and sends the request to an http:// proxy as is, so
// the sink gets it at once and the traffic stays on 127.0.0.1; the
// targets (ws://, http:// on 127.0.0.1) are left out by NO_PROXY.
func telemetrySink(t *testing.T) []string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	return []string{"HTTPS_PROXY=" + srv.URL, "https_proxy=" + srv.URL, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
}

func TestArtilleryWebSocket(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, "-variant", "echo-coder")
	before := tg.Stats(t)
	c := artillery(t, "ws-echo.yml", "ws://"+tg.Addr+"/")
	d := tg.Settled(t, before)
	if c["vusers.created"] != 10 || c["vusers.failed"] != 0 || c["websocket.messages_sent"] != 50 {
		t.Errorf("artillery counters %v: want 10 users, none failed, 50 messages", c)
	}
	if d.ConnectionsTotal != c["vusers.created"] || d.MessagesReceived != c["websocket.messages_sent"] || d.MessagesSent != c["websocket.messages_received"] {
		t.Errorf("artillery claims %v; the server saw %d connections, %d messages in, %d out", c, d.ConnectionsTotal, d.MessagesReceived, d.MessagesSent)
	}
}

func TestArtillerySocketIO(t *testing.T) {
	t.Parallel()
	for _, e := range sioEngines {
		if e.ws {
			continue // artillery's Socket.IO engine starts on polling
		}
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			testArtillerySocketIO(t, e.flags, "socketio.yml", "/")
			// A user's script on its own path and namespace, unchanged:
			// config.socketio.path and a namespace per step.
			testArtillerySocketIO(t, append(slices.Clone(e.flags), "-path", "/socket/socket.io/"), "socketio-path.yml", "/cobrowse")
		})
	}
}

func testArtillerySocketIO(t *testing.T, flags []string, script, namespace string) {
	tg := harness.Start(t, append([]string{"-variant", "empty"}, flags...)...)
	before := tg.Stats(t)
	c := artillery(t, script, "http://"+tg.Addr)
	d := tg.Settled(t, before)
	if c["vusers.created"] != 10 || c["vusers.failed"] != 0 || c["socketio.emit"] != 40 {
		t.Errorf("artillery counters %v: want 10 users, none failed, 40 emits", c)
	}
	// Each user: 3 echo (acked) + 1 message (message-back): 4 in, 4 out;
	// on the main namespace one Engine.IO session. On another, artillery's
	// engine may open a second session for the main namespace besides
	// (19 sessions for 10 users measured), which sends nothing.
	sessions, users := d.Handshakes[protocol.ResultOK], c["vusers.created"]
	if sessions < users || (namespace == "/" && sessions != users) || sessions > 2*users ||
		d.MessagesReceived != c["socketio.emit"] || d.MessagesSent != c["socketio.emit"] {
		t.Errorf("artillery claims %v; the server saw %v handshakes, %d events in, %d out", c, d.Handshakes, d.MessagesReceived, d.MessagesSent)
	}
	if d.Namespaces[namespace] != c["vusers.created"] {
		t.Errorf("%s: artillery claims %d users; the server counted namespaces %v, want each on %s", script, c["vusers.created"], d.Namespaces, namespace)
	}
}

func TestTsungWebSocket(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("tsung")
	prereq.Need(t, "tsung (Debian)", err)
	tg := harness.Start(t, "-variant", "echo-gnet")
	host, port := splitHostPort(t, tg.Addr)
	before := tg.Stats(t)
	out := run(t, []string{"TMPDIR=" + t.TempDir()}, "tsung/run.sh", host, port)
	d := tg.Settled(t, before)
	counts := map[string]uint64{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+) (\d+)$`).FindAllStringSubmatch(string(out), -1) {
		counts[m[1]], _ = strconv.ParseUint(m[2], 10, 64)
	}
	// Arrivals are random: up to 10 users in the 2 s phase.
	if counts["connect"] == 0 || counts["match"] != 5*counts["connect"] || counts["match_abort"] != 0 {
		t.Errorf("tsung counters %v: want 5 matches per connect, no abort\n%s", counts, out)
	}
	if d.ConnectionsTotal != counts["connect"] || d.MessagesReceived != counts["match"] || d.MessagesSent != counts["match"] {
		t.Errorf("tsung claims %v; the server saw %d connections, %d messages in, %d out", counts, d.ConnectionsTotal, d.MessagesReceived, d.MessagesSent)
	}
}

func TestWscat(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("../wscat/node_modules/wscat/package.json")
	prereq.Need(t, "wscat (npm ci in scripts/wscat)", err)
	tg := harness.Start(t, "-variant", "echo-gorilla")
	before := tg.Stats(t)
	// wscat quits at once when its stdin ends: hold it open.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wscat/node_modules/.bin/wscat", "-c", "ws://"+tg.Addr+"/", "-x", "hello from wscat", "-w", "1")
	cmd.Dir, cmd.Stdin = "..", r
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("hello from wscat")) {
		t.Errorf("wscat: %v, printed %q; want the echo", err, out)
	}
	d := tg.Settled(t, before)
	if d.ConnectionsTotal != 1 || d.MessagesReceived != 1 || d.BytesReceived != uint64(len("hello from wscat")) {
		t.Errorf("wscat sent one message of %d bytes; the server saw %d connections, %d messages, %d bytes",
			len("hello from wscat"), d.ConnectionsTotal, d.MessagesReceived, d.BytesReceived)
	}
}

// clientResult is the JSON line of scripts/clients/sio_connect.py and
// sio-connect.mjs.
type clientResult struct {
	Client    string `json:"client"`
	Attempts  int    `json:"attempts"`
	Connected int    `json:"connected"`
	Echoed    int    `json:"echoed"`
	Failed    int    `json:"failed"`
}

// TestSocketIOHandshakeExperiment is the python-socketio AsyncClient
// experiment (N concurrent connects, 15 s timeout) and the same with the
// official JS socket.io-client, against the blocking target: the server's
// ok handshakes must be the clients' connected count.
func TestSocketIOHandshakeExperiment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, cmd, script string }{
		{"python-socketio", "/usr/bin/python3", "clients/sio_connect.py"},
		{"socket.io-client", "node", "clients/sio-connect.mjs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.cmd == "node" {
				_, err := os.Stat("../node_modules/socket.io-client/package.json")
				prereq.Need(t, "socket.io-client (make deps)", err)
			} else {
				prereq.Need(t, "python3-socketio for /usr/bin/python3", exec.Command(c.cmd, "-c", "import socketio, aiohttp").Run())
			}
			tg := harness.Start(t, "-variant", "blocking", "-delay", "10ms")
			before := tg.Stats(t)
			out := run(t, nil, c.cmd, c.script, "--url", "http://"+tg.Addr, "--n", "50", "--transports", "websocket", "--deadline-ms", "15000", "--echo")
			d := tg.Settled(t, before)
			var r clientResult
			if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
				t.Fatalf("%s printed %q: %v", c.script, out, err)
			}
			if r.Connected != 50 || r.Echoed != 50 {
				t.Errorf("%s: %+v; want 50 connected and echoed", c.name, r)
			}
			if d.Handshakes[protocol.ResultOK] != uint64(r.Connected) || d.MessagesReceived != uint64(r.Echoed) {
				t.Errorf("%s claims %d connected, %d echoed; the server saw %v handshakes, %d events", c.name, r.Connected, r.Echoed, d.Handshakes, d.MessagesReceived)
			}
		})
	}
}

// TestWSEcho is the official JS ws client's echo cases.
func TestWSEcho(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("../node_modules/ws/package.json")
	prereq.Need(t, "ws (make deps)", err)
	tg := harness.Start(t, "-variant", "echo-coder")
	before := tg.Stats(t)
	out := run(t, nil, "node", "clients/ws-echo.mjs", "--url", "ws://"+tg.Addr+"/")
	d := tg.Settled(t, before)
	var r struct {
		Cases    map[string]string `json:"cases"`
		Messages uint64            `json:"messages"`
		Bytes    uint64            `json:"bytes"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		t.Fatalf("ws-echo printed %q: %v", out, err)
	}
	for name, result := range r.Cases {
		if result != "ok" {
			t.Errorf("ws case %s: %s", name, result)
		}
	}
	if d.MessagesReceived != r.Messages || d.BytesReceived != r.Bytes {
		t.Errorf("ws claims %d messages, %d bytes; the server saw %d, %d", r.Messages, r.Bytes, d.MessagesReceived, d.BytesReceived)
	}
}

func splitHostPort(t *testing.T, addr string) (string, string) {
	m := regexp.MustCompile(`^(.*):(\d+)$`).FindStringSubmatch(addr)
	if m == nil {
		t.Fatalf("address %q", addr)
	}
	return m[1], m[2]
}

// TestLocust: the cluster report's client (python-socketio's Client over
// WebSocket, a trade_update emit every 1-5 s) as a Locust user, run
// headless under loadgen watch, on each engine: every user connects, every
// emit is acknowledged, and the figures loadgen watch reads from Locust's
// own CSV stats agree with the target's /stats.
func TestLocust(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("locust")
	prereq.Need(t, "Locust (Debian's python3-locust)", err)
	for _, e := range sioEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			tg := harness.Start(t, append([]string{"-variant", "empty"}, e.flags...)...)
			report := filepath.Join(t.TempDir(), "watch.json")
			run(t, nil, harness.LoadgenT(t), "watch", "-admin", tg.AdminURL(), "-json", report, "--",
				"locust", "-f", "locust/locustfile.py", "--headless", "-u", "10", "-r", "10", "-t", "4s", "--stop-timeout", "10", "--host", "http://"+tg.Addr, "--only-summary")
			raw, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Source   string         `json:"client_source"`
				Attempts int            `json:"client_attempts"`
				OK       int            `json:"client_ok"`
				Sent     int64          `json:"client_sent"`
				Received int64          `json:"client_received"`
				Server   protocol.Stats `json:"server"`
				Loss     bool           `json:"loss"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			if r.Source != "locust summary" || r.Attempts != 10 || r.OK != 10 || r.Sent < 10 || r.Received != r.Sent {
				t.Errorf("Locust's figures %s %d/%d connected, %d sent, %d acked: want 10 users connected, every trade_update acknowledged", r.Source, r.OK, r.Attempts, r.Sent, r.Received)
			}
			if r.Server.Handshakes[protocol.ResultOK] != uint64(r.OK) || r.Server.MessagesReceived != uint64(r.Sent) || r.Server.MessagesSent != uint64(r.Received) || r.Loss {
				t.Errorf("Locust claims %d connected, %d sent, %d acked; the server saw %v handshakes, %d events in, %d acks out (loss %v)",
					r.OK, r.Sent, r.Received, r.Server.Handshakes, r.Server.MessagesReceived, r.Server.MessagesSent, r.Loss)
			}
		})
	}
}

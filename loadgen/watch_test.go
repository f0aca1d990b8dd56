package main

// loadgen watch around the real tools, against real targets: the client's
// side of every verdict is read from the tool itself (its JSON line, its
// summary or report file, its log), never typed. And loadgen reconcile,
// with counts typed after the run.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/loadgen/watch"
	"github.com/knowngood/knowngood/scripts/harness"
)

// watched runs loadgen watch (or reconcile) with -json - and returns its
// report and exit status; the table and the command's output go to the
// log.
func watched(t *testing.T, args ...string) (*watch.Report, int) {
	t.Helper()
	if i := slices.Index(args, "--"); i >= 0 {
		args = append(append(slices.Clip(args[:i]), "-json", "-"), args[i:]...)
	} else {
		args = append(args, "-json", "-")
	}
	var stdout, stderr strings.Builder
	code := run(context.Background(), args, &stdout, &stderr)
	out := strings.TrimSpace(stdout.String())
	t.Logf("loadgen %q: exit %d\n%s\n%s", args, code, out, stderr.String())
	// Every watched run points at the target's live dashboard first.
	if i := slices.Index(args, "-admin"); args[0] == "watch" && i >= 0 && (code == 0 || code == 1) {
		first, _, _ := strings.Cut(args[i+1], ",")
		if want := "loadgen watch: the target's live dashboard: " + strings.TrimSuffix(first, "/") + "/"; !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	var r watch.Report
	if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "\n")+1:]), &r); err != nil {
		t.Fatalf("loadgen %q printed %q: %v", args, out, err)
	}
	return &r, code
}

func hasNot(t *testing.T, vs []verdict.Verdict, kinds ...string) {
	t.Helper()
	for _, v := range vs {
		if slices.Contains(kinds, v.Kind) {
			t.Errorf("a %s verdict: %s", v.Kind, v.Text)
		}
	}
}

func k6Path() string {
	gopath, _ := exec.Command("go", "env", "GOPATH").Output()
	return filepath.Join(strings.TrimSpace(string(gopath)), "bin", "k6")
}

// artilleryBin is run through env with ARTILLERY_DISABLE_TELEMETRY=true:
// set on its command line, not with t.Setenv, which would keep the test
// from running in parallel with the others.
const artilleryBin = "../scripts/artillery/node_modules/.bin/artillery"

// TestWatchReadsTools: each tool's own figures, read by watch, against a
// target where nothing goes wrong: the verdict is agreement, citing the
// tool's figures, with none typed.
func TestWatchReadsTools(t *testing.T) {
	t.Parallel()
	k6 := k6Path()
	for _, c := range []struct {
		name, what, path, variant, source string
		command                           func(tg target) []string
		n, messages                       int // connections, and messages to the server and back (-1: unknown)
		back                              int
	}{
		{"js", "socket.io-client (scripts/node_modules)", "../scripts/node_modules/socket.io-client/package.json", "empty", "socket.io-client JSON line",
			func(tg target) []string {
				return []string{"node", "../scripts/clients/sio-connect.mjs", "--url", tg.url, "--n", "30", "--transports", "websocket", "--echo"}
			}, 30, 30, 30},
		{"python", "python-socketio (/usr/bin/python3)", "/usr/lib/python3/dist-packages/socketio/__init__.py", "empty", "python-socketio JSON line",
			func(tg target) []string {
				return []string{"/usr/bin/python3", "../scripts/clients/sio_connect.py", "--url", tg.url, "--n", "20", "--transports", "websocket", "--echo"}
			}, 20, 20, 20},
		{"k6-socketio", "k6 (make deps)", k6, "empty", "k6 summary",
			func(tg target) []string {
				return []string{k6, "run", "--quiet", "--no-usage-report", "-e", "TARGET=" + tg.url, "-e", "VUS=5", "-e", "ITERATIONS=10", "-e", "EMITS=2", "../scripts/k6/socketio.js"}
			}, 10, 20, 20},
		{"k6-ws-echo", "k6 (make deps)", k6, "echo-gorilla", "k6 summary",
			func(tg target) []string {
				return []string{k6, "run", "--quiet", "--no-usage-report", "-e", "TARGET=ws://" + tg.addr + "/", "-e", "VUS=5", "-e", "ITERATIONS=10", "-e", "MESSAGES=3", "../scripts/k6/ws-echo.js"}
			}, 10, 30, 30},
		{"artillery-socketio", "artillery (make deps)", artilleryBin, "empty", "artillery report",
			func(tg target) []string {
				return []string{"env", "ARTILLERY_DISABLE_TELEMETRY=true", artilleryBin, "run", "--quiet", "--target", tg.url, "../scripts/artillery/socketio.yml"}
			}, 10, 40, -1},
		{"artillery-ws-echo", "artillery (make deps)", artilleryBin, "echo-coder", "artillery report",
			func(tg target) []string {
				return []string{"env", "ARTILLERY_DISABLE_TELEMETRY=true", artilleryBin, "run", "--quiet", "--target", "ws://" + tg.addr + "/", "../scripts/artillery/ws-echo.yml"}
			}, 10, 50, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			need(t, c.what, c.path)
			tg := startTarget(t, c.variant)
			r, code := watched(t, append([]string{"watch", "-admin", tg.admin, "--"}, c.command(tg)...)...)
			if code != 0 || r.Source != c.source || r.Attempts != c.n || r.OK != c.n || r.Sent != int64(c.messages) || r.Received != int64(c.back) {
				t.Errorf("exit %d, client figures %+v; want 0 and from %s: %d attempts and ok, %d sent, %d received", code, r.Figures, c.source, c.n, c.messages, c.back)
			}
			has(t, r.Verdicts, verdict.Agree, fmt.Sprintf("client and server agree: %d of %d handshakes completed", c.n, c.n))
			has(t, r.Verdicts, verdict.Agree, "(the client's figures: "+c.source+")")
			if c.back < 0 {
				has(t, r.Verdicts, verdict.ClientUnknown, "messages out; the client's figures (artillery report) have no count of these: nothing is placed on the client")
			}
			if r.Loss || (c.back >= 0) == r.ClientUnknown {
				t.Errorf("loss %v, client unknown %v", r.Loss, r.ClientUnknown)
			}
		})
	}
}

// TestWatchTsung: the tsung recipe, its log found through its output.
func TestWatchTsung(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tsung"); err != nil {
		need(t, "tsung (Debian)", "/usr/bin/tsung")
	}
	harness.LockTsung(t)
	tg := startTarget(t, "echo-gnet")
	host, port, _ := strings.Cut(tg.addr, ":")
	// The recipe's log goes to the test's directory; TMPDIR is set on the
	// command line, as t.Setenv would keep the test from running in
	// parallel.
	r, code := watched(t, "watch", "-admin", tg.admin, "--", "env", "TMPDIR="+t.TempDir(), "../scripts/tsung/run.sh", host, port)
	if code != 0 || r.Source != "tsung log (scripts/tsung recipe)" || r.OK <= 0 || r.Attempts != r.OK || r.Sent != int64(5*r.OK) {
		t.Errorf("exit %d, client figures %+v; want from the tsung log, 5 messages a connection", code, r.Figures)
	}
	has(t, r.Verdicts, verdict.Agree, fmt.Sprintf("client and server agree: %d of %d handshakes completed", r.OK, r.OK))
	has(t, r.Verdicts, verdict.Agree, "client and server agree on the messages")
}

// TestWatchBlocking: the blocking target holds its one loop 50 ms a
// connect, and each client gives up after 1 s: about 20 of 60 connect, the
// others are abandoned. The figures are the clients' own, and the verdict
// places the failures on the deadline: nothing lost on either side beyond it.
func TestWatchBlocking(t *testing.T) {
	// Not parallel: each client must reach the blocking target within its
	// 1 s deadline, which the package's other clients and targets starting
	// at once on a busy machine kept one from; it runs before them.
	k6 := k6Path()
	for _, c := range []struct {
		name, what, path, source string
		command                  func(tg target) []string
		exit                     int
	}{
		{"js", "socket.io-client (scripts/node_modules)", "../scripts/node_modules/socket.io-client/package.json", "socket.io-client JSON line",
			func(tg target) []string {
				return []string{"node", "../scripts/clients/sio-connect.mjs", "--url", tg.url, "--n", "60", "--transports", "websocket", "--deadline-ms", "1000"}
			}, 0},
		{"python", "python-socketio (/usr/bin/python3)", "/usr/lib/python3/dist-packages/socketio/__init__.py", "python-socketio JSON line",
			func(tg target) []string {
				return []string{"/usr/bin/python3", "../scripts/clients/sio_connect.py", "--url", tg.url, "--n", "60", "--transports", "websocket", "--deadline-ms", "1000"}
			}, 0},
		// The recipe's checks fail for the connections that time out, so
		// k6 exits 99 (thresholds crossed).
		{"k6", "k6 (make deps)", k6, "k6 summary",
			func(tg target) []string {
				return []string{k6, "run", "--quiet", "--no-usage-report", "-e", "TARGET=" + tg.url, "-e", "VUS=60", "-e", "ITERATIONS=60", "-e", "EMITS=1", "-e", "TIMEOUT_MS=1000", "../scripts/k6/socketio.js"}
			}, 99},
	} {
		t.Run(c.name, func(t *testing.T) {
			// One client at a time: each must reach the server within its
			// 1 s deadline, and three runtimes starting 60 clients at once
			// on a busy machine left one with none there in time.
			need(t, c.what, c.path)
			tg := startTarget(t, "blocking", "-delay", "50ms")
			r, _ := watched(t, append([]string{"watch", "-admin", tg.admin, "-deadline", "1s", "--"}, c.command(tg)...)...)
			ok, abandoned := r.Server.Handshakes["ok"], r.Server.Handshakes["abandoned"]
			if r.ExitCode != c.exit || r.Source != c.source || r.Attempts != 60 || r.OK < 0 || uint64(r.OK) > ok || abandoned == 0 {
				t.Errorf("exit %d, client figures %+v, server %v; want exit %d, 60 attempts from %s, ok no more than the server's, some abandoned",
					r.ExitCode, r.Figures, r.Server.Handshakes, c.exit, c.source)
			}
			has(t, r.Verdicts, verdict.Queued, "60 connects need 3s, the client's deadline was 1s")
			has(t, r.Verdicts, verdict.Abandoned, fmt.Sprintf("the client left %d handshakes", abandoned))
			hasNot(t, r.Verdicts, verdict.ClaimsMore, verdict.NeverReached, verdict.ClientUnknown)
			if c.exit != 0 {
				has(t, r.Verdicts, verdict.CommandFailed, fmt.Sprintf("the command failed (exit status %d)", c.exit))
			}
			// Abandoned and queued connects are the server's documented
			// answers, not a loss; a handshake the server finished as the
			// client left is one (client-lost), and so is a failed command.
			if want := c.exit != 0 || uint64(r.OK) < ok; r.Loss != want {
				t.Errorf("loss %v, want %v (command exit %d, client ok %d, server ok %d)", r.Loss, want, r.ExitCode, r.OK, ok)
			}
		})
	}
}

// TestWatchCatchesLyingTool: a tool that makes 30 connections and prints,
// in the JS client's format, that it made 50: the verdict names the
// difference.
func TestWatchCatchesLyingTool(t *testing.T) {
	t.Parallel()
	need(t, "socket.io-client (scripts/node_modules)", "../scripts/node_modules/socket.io-client/package.json")
	tg := startTarget(t, "empty")
	lie := `{"client":"socket.io-client","version":"4.8.1","attempts":50,"connected":50,"failed":0,"sent":0,"received":0}`
	r, code := watched(t, "watch", "-admin", tg.admin, "--", "sh", "-c",
		`node ../scripts/clients/sio-connect.mjs --url "$1" --n 30 --transports websocket >/dev/null && echo "$2"`, "sh", tg.url, lie)
	// The 20 connections the tool claims and the server never saw are
	// found lost: the run fails.
	if code != 1 || r.OK != 50 || r.Server.Handshakes["ok"] != 30 {
		t.Fatalf("exit %d, client %+v, server %v; want 1, the lie, 30 ok", code, r.Figures, r.Server.Handshakes)
	}
	has(t, r.Verdicts, verdict.ClaimsMore, "the client claims 50 connected, more than the 30 handshakes the server completed (of 30 it saw): 20 that the server never completed")
	for _, v := range r.Verdicts {
		if v.Kind == verdict.Agree && strings.Contains(v.Text, "handshakes") {
			t.Errorf("agreement on the handshakes: %s", v.Text)
		}
	}
	if !r.Loss {
		t.Error("no loss found")
	}
}

// TestWatchUnknownFigures: a tool whose output watch cannot read, against
// the blocking target with abandoned connects: the verdict gives the
// server's figures, says the client's are unknown, and places nothing on
// the client.
func TestWatchUnknownFigures(t *testing.T) {
	// Not parallel: each client must reach the blocking target within its
	// 1 s deadline, which the package's other clients and targets starting
	// at once on a busy machine kept one from; it runs before them.
	need(t, "socket.io-client (scripts/node_modules)", "../scripts/node_modules/socket.io-client/package.json")
	tg := startTarget(t, "blocking", "-delay", "50ms")
	r, code := watched(t, "watch", "-admin", tg.admin, "--", "sh", "-c",
		`node ../scripts/clients/sio-connect.mjs --url "$1" --n 40 --transports websocket --deadline-ms 1000 >/dev/null`, "sh", tg.url)
	ok, abandoned := r.Server.Handshakes["ok"], r.Server.Handshakes["abandoned"]
	if code != 0 || r.Source != "" || r.Attempts != -1 || r.OK != -1 || abandoned == 0 || !r.ClientUnknown {
		t.Fatalf("exit %d, client %+v, server %v; want 0, unknown figures, some abandoned", code, r.Figures, r.Server.Handshakes)
	}
	has(t, r.Verdicts, verdict.ClientUnknown, fmt.Sprintf("the server saw %d handshakes complete (%d abandoned), 0 messages in and 0 out; client figures unknown: pass -client-json or use a recognised tool", ok, abandoned))
	hasNot(t, r.Verdicts, verdict.Agree, verdict.ClientLost, verdict.NeverReached, verdict.Abandoned, verdict.ClaimsMore, verdict.RepliesLost)
}

// TestWatchCommandFails: a tool that exits 2 on a bad option is reported
// as failed, never as "nothing was lost".
func TestWatchCommandFails(t *testing.T) {
	t.Parallel()
	need(t, "socket.io-client (scripts/node_modules)", "../scripts/node_modules/socket.io-client/package.json")
	tg := startTarget(t, "empty")
	r, code := watched(t, "watch", "-admin", tg.admin, "--", "node", "../scripts/clients/sio-connect.mjs", "--url", tg.url, "--n", "lots")
	if code != 1 || r.ExitCode != 2 || !r.Loss {
		t.Errorf("loadgen exit %d, command exit %d, loss %v; want 1, 2, true", code, r.ExitCode, r.Loss)
	}
	has(t, r.Verdicts, verdict.CommandFailed, "the command failed (exit status 2)")
	hasNot(t, r.Verdicts, verdict.Agree)
}

// TestWatchRefusesTypedCounts: counts typed before the run are refused,
// with where they go instead.
func TestWatchRefusesTypedCounts(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"watch", "-admin", "http://127.0.0.1:9", "-client-ok=39", "--", "true"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "flag -client-ok:") || !strings.Contains(stderr.String(), "-client-json") || !strings.Contains(stderr.String(), "loadgen reconcile") {
		t.Errorf("exit %d, %q; want 2 and a message pointing to -client-json and loadgen reconcile", code, stderr.String())
	}
}

// saveStats writes the target's /stats to a file, as curl would.
func saveStats(t *testing.T, admin string) string {
	t.Helper()
	res, err := http.Get(admin + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "stats.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReconcile: a snapshot saved before an unwatched run of the JS
// client, and its counts typed after: against the live /stats, and
// against a second saved snapshot.
func TestReconcile(t *testing.T) {
	t.Parallel()
	need(t, "socket.io-client (scripts/node_modules)", "../scripts/node_modules/socket.io-client/package.json")
	tg := startTarget(t, "empty")
	before := saveStats(t, tg.admin)
	out, err := exec.Command("node", "../scripts/clients/sio-connect.mjs", "--url", tg.url, "--n", "25", "--transports", "websocket").Output()
	if err != nil {
		t.Fatalf("sio-connect: %v\n%s", err, out)
	}
	var line struct{ Attempts, Connected int }
	if err := json.Unmarshal(out, &line); err != nil || line.Connected != 25 {
		t.Fatalf("sio-connect printed %q (%v): want 25 connected", out, err)
	}
	r, code := watched(t, "reconcile", "-admin", tg.admin, "-before", before, "-client-attempts", "25", "-client-ok", "25")
	if code != 0 || r.Source != "typed after the run" {
		t.Errorf("exit %d, source %q", code, r.Source)
	}
	has(t, r.Verdicts, verdict.Agree, "client and server agree: 25 of 25 handshakes completed")
	after := saveStats(t, tg.admin)
	var stderr strings.Builder
	if code := run(context.Background(), []string{"reconcile", "-before", before, "-after", after, "-client-attempts", "25", "-client-ok", "30"}, io.Discard, &stderr); code != 2 {
		t.Errorf("-client-ok more than -client-attempts: exit %d; want 2", code)
	}
	r, _ = watched(t, "reconcile", "-before", before, "-after", after, "-client-attempts", "25", "-client-ok", "20")
	has(t, r.Verdicts, verdict.ClientLost, "the server completed 25 of 25 handshakes")
	if code := run(context.Background(), []string{"reconcile", "-admin", tg.admin, "-before", before}, io.Discard, &stderr); code != 2 {
		t.Errorf("no counts: exit %d; want 2", code)
	}
}

// TestWatchInterop: the zishang520 Go client over polling sends every POST
// chunked, without Content-Length; the target serves it and counts it,
// and the verdict warns that python-socketio would drop those POSTs.
func TestWatchInterop(t *testing.T) {
	t.Parallel()
	bin, err := harness.Build("./scripts/clients/sio-connect-go", "sio-connect-go")
	if err != nil {
		t.Fatal(err)
	}
	tg := startTarget(t, "empty")
	r, code := watched(t, "watch", "-admin", tg.admin, "--", bin, "--url", tg.url, "--n", "5", "--transports", "polling", "--deadline-ms", "10000")
	if code != 0 || r.OK != 5 {
		t.Fatalf("exit %d, client %+v, server %v: want all 5 connected", code, r.Figures, r.Server.Handshakes)
	}
	has(t, r.Verdicts, verdict.Interop, "polling POSTs without Content-Length (Transfer-Encoding: chunked), which python-engineio 4")
}

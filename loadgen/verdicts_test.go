package main

// Each verdict made true by a real run against a real target: a connect
// that holds one shared loop beside a short deadline, a -max-conns cap, a
// client out of file descriptors, a client that drops replies, and runs
// where nothing went wrong. And loadgen watch around the official JS
// client, python-socketio and k6.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/browser"
)

// TestMain doubles as the client that drops replies (see dropReplies).
func TestMain(m *testing.M) {
	if url := os.Getenv("KG_DROPPER_URL"); url != "" {
		os.Exit(dropReplies(url))
	}
	code := m.Run()
	browser.Stop()
	harness.RemoveBuilds()
	os.Exit(code)
}

// target is a knowngood process for a loadgen run: its target's and its
// admin listener's URLs.
type target struct {
	addr  string // HOST:PORT
	url   string // http://HOST:PORT, for the Socket.IO scenarios
	admin string // http://HOST:PORT
	ws    string // ws://HOST:PORT/any/path?x=1: the echo variants serve every path
}

// startTarget runs the knowngood binary as variant with the extra flags, on
// free loopback ports; it stops when the test ends.
func startTarget(t *testing.T, variant string, flags ...string) target {
	t.Helper()
	p := harness.Start(t, append([]string{"-variant", variant}, flags...)...)
	return target{addr: p.Addr, url: "http://" + p.Addr, admin: p.AdminURL(), ws: "ws://" + p.Addr + "/any/path?x=1"}
}

// judged is what every scenario's JSON has in common here.
type judged struct {
	Verdicts []verdict.Verdict `json:"verdicts"`
}

// loadgen runs loadgen in this process with -json - and returns the
// verdicts; stdout (the command's output, for watch) goes to the log. The
// run must pass (exit 0).
func loadgen(t *testing.T, args ...string) []verdict.Verdict {
	t.Helper()
	return loadgenExit(t, []int{0}, args...)
}

// loadgenExit is loadgen for a run whose exit status is one of codes: a
// run whose verdicts find a loss fails (1).
func loadgenExit(t *testing.T, codes []int, args ...string) []verdict.Verdict {
	t.Helper()
	if i := slices.Index(args, "--"); i >= 0 { // watch: flags before the command
		args = append(append(slices.Clip(args[:i]), "-json", "-"), args[i:]...)
	} else {
		args = append(args, "-json", "-")
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), args, &stdout, &stderr); !slices.Contains(codes, code) {
		t.Fatalf("loadgen %q: exit %d\n%s", args, code, stderr.String())
	}
	out := stdout.String()
	var r judged
	if err := json.Unmarshal([]byte(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), &r); err != nil {
		t.Fatalf("loadgen %q printed %q: %v", args, out, err)
	}
	t.Logf("%s", stderr.String())
	return r.Verdicts
}

func has(t *testing.T, vs []verdict.Verdict, kind, text string) {
	t.Helper()
	for _, v := range vs {
		if v.Kind == kind && strings.Contains(v.Text, text) {
			return
		}
	}
	t.Errorf("no %s verdict saying %q in %+v", kind, text, vs)
}

func TestVerdictQueuedConnect(t *testing.T) {
	// Not parallel: each client must reach the blocking target within its
	// 1 s deadline, which the package's other clients and targets starting
	// at once on a busy machine kept one from; it runs before them.
	tg := startTarget(t, "blocking", "-delay", "50ms")
	// A handshake the server finishes as the client leaves it is lost on
	// the client's side: the run may fail.
	vs := loadgenExit(t, []int{0, 1}, "handshake", "-url", tg.url, "-admin", tg.admin, "-n", "60", "-deadline", "1s", "-transport", "websocket")
	has(t, vs, verdict.Queued, "the server froze its one loop 50ms for each connect and let an answer leave only after the connects queued with it (-blocking-model asyncio, as python-socketio on uvicorn): 60 connects need 3s, the client's deadline was 1s")
	has(t, vs, verdict.Abandoned, "the client left")
}

func TestVerdictCapped(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "empty", "-max-conns", "20")
	vs := loadgen(t, "handshake", "-url", tg.url, "-admin", tg.admin, "-n", "40", "-deadline", "10s", "-transport", "websocket", "-echo=false")
	has(t, vs, verdict.Capped, "the server refused 20 of 40 at its -max-conns 20 cap")
}

func TestVerdictAgree(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "empty")
	vs := loadgen(t, "handshake", "-url", tg.url, "-admin", tg.admin, "-n", "50", "-deadline", "10s")
	has(t, vs, verdict.Agree, "client and server agree: 50 of 50 handshakes completed")
	etg := startTarget(t, "echo-gorilla")
	vs = loadgen(t, "echo", "-url", etg.ws, "-admin", etg.admin, "-c", "4", "-mode", "sync", "-duration", "500ms", "-warmup", "100ms")
	has(t, vs, verdict.Agree, "client and server agree on the messages")
}

// TestVerdictNeverReached: loadgen under an open-files limit of 40 cannot
// open most of its 80 sockets; the server sees only the others.
func TestVerdictNeverReached(t *testing.T) {
	t.Parallel()
	prlimit, bin := underPrlimit(t)
	tg := startTarget(t, "empty")
	out, err := exec.Command(prlimit, "--nofile=40:40", bin, "handshake", "-url", tg.url, "-admin", tg.admin,
		"-n", "80", "-deadline", "5s", "-transport", "websocket", "-json", "-").Output()
	if err := harness.LoadgenRan(err, out); err != nil { // the attempts lost fail the run
		t.Fatalf("loadgen under prlimit: %v", err)
	}
	if err == nil {
		t.Error("loadgen under prlimit: exit 0; want 1: the attempts that never reached the server are a loss")
	}
	var r judged
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	// Whether the kernel dropped some at a listen queue meanwhile depends
	// on every listener of the machine's namespace (the tests beside this
	// one): the verdict says either way, from the target's count.
	has(t, r.Verdicts, verdict.NeverReached, "never reached it: the kernel dropped")
}

// underPrlimit finds prlimit (util-linux), or skips, and the loadgen
// binary (built once), for a run under an open-files limit of the test's
// choosing.
func underPrlimit(t *testing.T) (prlimit, loadgen string) {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is missing")
	}
	return prlimit, harness.LoadgenT(t)
}

// dropReplies is a client with a bug: it sends 100 echo messages and reads
// only 50 of the replies before it hangs up. It prints what it counted,
// and writes it to the file KG_DROPPER_JSON names (for -client-json).
func dropReplies(url string) int {
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := range 100 {
		if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, "message %d", i)); err != nil {
			return 1
		}
	}
	for range 50 {
		if _, _, err := c.ReadMessage(); err != nil {
			return 1
		}
	}
	// The other 50 replies arrive, unread.
	time.Sleep(200 * time.Millisecond)
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(1000, ""), time.Now().Add(time.Second))
	_ = c.Close()
	counts := `{"attempts":1,"ok":1,"sent":100,"received":50}`
	fmt.Println(counts)
	if path := os.Getenv("KG_DROPPER_JSON"); path != "" {
		if err := os.WriteFile(path, []byte(counts), 0o644); err != nil {
			return 1
		}
	}
	return 0
}

// dropper is the command that runs this test binary as the client that
// drops replies, against url, writing its counts to the file counts. The
// settings go in through env, on the command line, rather than t.Setenv,
// which would keep the test that runs it from running in parallel.
func dropper(url, counts string) []string {
	return []string{"env", "KG_DROPPER_URL=" + url, "KG_DROPPER_JSON=" + counts, os.Args[0]}
}

func TestWatchClientThatDropsReplies(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "echo-gorilla")
	counts := filepath.Join(t.TempDir(), "counts.json")
	vs := loadgenExit(t, []int{1}, append([]string{"watch", "-admin", tg.admin, "-client-json", counts, "--"}, dropper(tg.ws, counts)...)...)
	has(t, vs, verdict.RepliesLost, "the server sent 100 messages and the client counted 50: the other 50 were lost on the client side")
}

// need skips a test whose external tool is missing, except in CI, where
// .ci/run has installed it.
func need(t *testing.T, what, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing; .ci/run should have installed it (make deps)", what)
	}
	t.Skipf("%s is missing: run make deps", what)
}

// TestVerdictConnsSocketIO: conns on a Socket.IO URL holds Socket.IO
// sockets (the namespace CONNECT done), so that its count and the
// server's handshakes are of one unit: nothing lost, exit 0.
func TestVerdictConnsSocketIO(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "empty")
	vs := loadgen(t, "conns", "-url", "ws://"+tg.addr+"/socket.io/?EIO=4&transport=websocket", "-admin", tg.admin, "-n", "200", "-hold", "0")
	has(t, vs, verdict.Agree, "client and server agree: 200 of 200 handshakes completed")
	for _, v := range vs {
		if v.Loss {
			t.Errorf("a loss in a run that lost nothing: %+v", v)
		}
	}
}

// TestVerdictUnits: runs whose client counts a unit the server does not
// (raw TCP connections to a WebSocket target, the auth event a Socket.IO
// target emits beside the acks) pass, with the verdict saying what was
// compared; echo-tcp's TCP connections are compared with the connections
// it accepted.
func TestVerdictUnits(t *testing.T) {
	t.Parallel()
	ws := startTarget(t, "echo-gorilla")
	vs := loadgen(t, "conns", "-url", "tcp://"+ws.addr, "-admin", ws.admin, "-n", "10", "-hold", "0")
	has(t, vs, verdict.Incomparable, "the client counted TCP connections (10 of 10), and this target counts handshakes")
	tcp := startTarget(t, "echo-tcp")
	vs = loadgen(t, "conns", "-url", "tcp://"+tcp.addr, "-admin", tcp.admin, "-n", "10", "-hold", "0")
	has(t, vs, verdict.Agree, "client and server agree: 10 of 10 TCP connections accepted")
	// A path the Socket.IO target does not serve: nothing connects (exit
	// 1), and the 404s reached it.
	root := startTarget(t, "empty")
	vs = loadgenExit(t, []int{1}, "conns", "-url", "ws://"+root.addr+"/", "-admin", root.admin, "-n", "5", "-hold", "0")
	has(t, vs, verdict.Outside, "the server answered 5 attempts with an HTTP status and counted no handshake for them")
	for _, v := range vs {
		if v.Loss {
			t.Errorf("a loss: %+v", v)
		}
	}
	sio := startTarget(t, "empty", "-emit-auth")
	vs = loadgen(t, "handshake", "-url", sio.url, "-admin", sio.admin, "-n", "20", "-deadline", "10s", "-transport", "websocket")
	has(t, vs, verdict.Agree, "the server sent 20, the client counted 20")
}

// TestVerdictListenQueue: a burst of connects against a target with a
// backlog of 8. How many the kernel drops at the listen queue depends on
// how fast the target accepts on this machine now, so the test checks
// the verdicts against the kernel's count, whatever it is: connects that
// never reached the target are put on the listen queue when it dropped
// some, and a run where every connect got in after drops says so.
func TestVerdictListenQueue(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "echo-gorilla", "-backlog", "8")
	vs := loadgenExit(t, []int{0, 1}, "conns", "-url", tg.ws, "-admin", tg.admin, "-n", "1000", "-batch", "1000", "-hold", "100ms", "-timeout", "3s")
	kinds := map[string]string{}
	for _, v := range vs {
		kinds[v.Kind] = v.Text
	}
	never, lost := kinds[verdict.NeverReached]
	queue, retried := kinds[verdict.ListenQueue]
	switch {
	case lost && !strings.Contains(never, "at the listen queue (backlog 8)") && !strings.Contains(never, "dropped none"):
		t.Errorf("connects never reached the target; the verdict does not say whether the listen queue dropped them: %q", never)
	case retried && (lost || !strings.Contains(queue, "(backlog 8)")):
		t.Errorf("a listen-queue verdict %q beside a loss %v", queue, lost)
	case !lost && !retried && kinds[verdict.Agree] == "":
		t.Errorf("neither a loss, nor retries at the listen queue, nor agreement: %+v", vs)
	}
	t.Logf("verdicts: %+v", vs)
}

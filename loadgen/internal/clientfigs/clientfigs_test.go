package clientfigs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func want(t *testing.T, got Figures, source string, attempts, ok int, sent, received int64) {
	t.Helper()
	if got.Source != source || got.Attempts != attempts || got.OK != ok || got.Sent != sent || got.Received != received {
		t.Errorf("figures %+v; want %s: attempts %d, ok %d, sent %d, received %d", got, source, attempts, ok, sent, received)
	}
}

// The summaries of the recipes' real runs: scripts/k6/socketio.js (10
// iterations of 2 emits) and ws-echo.js (10 of 3 messages).
func TestK6Summary(t *testing.T) {
	f, err := parseK6(read(t, "k6/socketio-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "", 10, 10, 20, 20)
	f, err = parseK6(read(t, "k6/ws-echo-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "", 10, 10, 30, 30)
	if f.Frames {
		t.Error("the recipe's own counters are not frames")
	}
}

// A script without the knowngood_* counters: ws_sessions and ws_msgs_*,
// the latter WebSocket frames, dropped on a Socket.IO target.
func TestK6Generic(t *testing.T) {
	raw := strings.NewReplacer(`"knowngood_`, `"other_`).Replace(string(read(t, "k6/socketio-summary.json")))
	f, err := parseK6([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "", 10, -1, 40, 40)
	want(t, f.ForSocketIO(), "", 10, -1, -1, -1)
	// k6 counts a refused dial as a session: a real run against a closed
	// port, 4 iterations.
	f, err = parseK6(read(t, "k6/ws-echo-refused-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "", 4, 0, 0, 0)
	raw = strings.NewReplacer(`"knowngood_`, `"other_`).Replace(string(read(t, "k6/ws-echo-refused-summary.json")))
	if f, err = parseK6([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	want(t, f, "", 4, -1, 0, 0)
	// handleSummary's data: the count under values.
	f, err = parseK6([]byte(`{"metrics":{"knowngood_attempts":{"type":"counter","values":{"count":5,"rate":1}},"knowngood_ok":{"type":"counter","values":{"count":4,"rate":1}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "", 5, 4, 0, 0)
	if _, err := parseK6([]byte(`{"nothing":1}`)); err == nil {
		t.Error("a summary without metrics: no error")
	}
}

// The reports of the recipes' real runs (10 users each), and of runs
// against a closed port (every user failed).
func TestArtilleryReport(t *testing.T) {
	for _, c := range []struct {
		file           string
		attempts, ok   int
		sent, received int64
	}{
		{"socketio-report.json", 10, 10, 40, -1},
		{"ws-echo-report.json", 10, 10, 50, 50},
		{"socketio-refused-report.json", 10, -1, 0, 0}, // no emit: nothing sent
		{"ws-echo-refused-report.json", 10, -1, 0, 0},
	} {
		f, err := parseArtillery(read(t, "artillery/"+c.file))
		if err != nil {
			t.Fatal(err)
		}
		want(t, f, "", c.attempts, c.ok, c.sent, c.received)
	}
}

// The log of a real run of scripts/tsung/run.sh: 9 users, 5 echoes each.
func TestTsungLog(t *testing.T) {
	f, err := parseTsung(read(t, "tsung/tsung.log"), true)
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "tsung log (scripts/tsung recipe)", 9, 9, 45, 45)
	f, err = parseTsung(read(t, "tsung/tsung.log"), false)
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "tsung log", 9, 9, -1, -1)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "log", "20261202-0739"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log", "20261202-0739", "tsung.log"), read(t, "tsung/tsung.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := Prepare([]string{"scripts/tsung/run.sh", "127.0.0.1", "8083"})
	f, err = p.Read(Output{Stdout: []byte("connect 9\nmatch 45\nlog: " + dir + "\n")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "tsung log (scripts/tsung recipe)", 9, 9, 45, 45)
}

// The JSON lines of real runs of scripts/clients/sio-connect.mjs and
// sio_connect.py (20 connections, --echo), and of sio-connect-go.
func TestClientLines(t *testing.T) {
	f, ok := parseClientLine(read(t, "clients/sio-connect.out"))
	if !ok {
		t.Fatal("sio-connect.mjs's line not recognised")
	}
	want(t, f, "socket.io-client JSON line", 20, 20, 20, 20)
	f, ok = parseClientLine(read(t, "clients/sio_connect_py.out"))
	if !ok {
		t.Fatal("sio_connect.py's line not recognised")
	}
	want(t, f, "python-socketio JSON line", 20, 20, 20, 20)
	// scripts/clients/sio-connect-go, default transports, 50 against empty.
	f, ok = parseClientLine(read(t, "clients/sio-connect-go.out"))
	if !ok {
		t.Fatal("sio-connect-go's line not recognised")
	}
	want(t, f, "zishang520/socket.io-client-go JSON line", 50, 43, 0, 0)
	// An older line without sent and received: messages unknown.
	f, _ = parseClientLine([]byte("noise\n" + `{"client":"socket.io-client","attempts":5,"connected":3}` + "\n"))
	want(t, f, "socket.io-client JSON line", 5, 3, -1, -1)
	if _, ok := parseClientLine([]byte(`{"sent":1}` + "\nplain text\n")); ok {
		t.Error("a line without client, attempts and connected was recognised")
	}
}

// websocket-bench (hashrocket/websocket-shootout) could not be installed
// here (its module is not served): its lines are made with the format of
// its TextResultRecorder.Record, copied from its source.
func TestWebsocketBench(t *testing.T) {
	const format = "clients: %5d    %dper-rtt: %3dms    min-rtt: %3dms    median-rtt: %3dms    max-rtt: %3dms\n"
	var out strings.Builder
	for _, n := range []int{1000, 2000, 3000} {
		fmt.Fprintf(&out, format, n, 95, 12, 0, 4, 31)
	}
	args := []string{"websocket-bench", "echo", "ws://127.0.0.1:8080/", "--step-size", "1000", "-s", "500"}
	f, err := parseWebsocketBench([]byte(out.String()), args, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 3 steps printed, the 4th over the limit: 4000 clients, 4 x 500 echoes.
	want(t, f, "websocket-bench output", 4000, 4000, 2000, 2000)
	f, err = parseWebsocketBench(read(t, "wsbench/echo.out"), args, 0)
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "websocket-bench output", 4000, 4000, 2000, 2000)
	f, err = parseWebsocketBench(read(t, "wsbench/broadcast.out"), []string{"websocket-bench", "broadcast", "ws://x/", "--step-size=500"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "websocket-bench output", 1000, 1000, 40, -1)
	if _, err := parseWebsocketBench([]byte(out.String()), args, 1); err == nil {
		t.Error("websocket-bench that failed: no error")
	}
	p, _ := Prepare(args)
	if p.Tool != WebsocketBench {
		t.Errorf("tool %q; want websocket-bench", p.Tool)
	}
}

func TestPrepare(t *testing.T) {
	for _, c := range []struct {
		command []string
		tool    string
		flag    string // added after run
	}{
		{[]string{"k6", "run", "--quiet", "s.js"}, K6, "--summary-export"},
		{[]string{"/root/go/bin/k6", "run", "--summary-export", "mine.json", "s.js"}, K6, ""},
		{[]string{"npx", "artillery", "run", "x.yml"}, Artillery, "--output"},
		{[]string{"artillery/node_modules/.bin/artillery", "run", "-o", "r.json", "x.yml"}, Artillery, ""},
		{[]string{"timeout", "30", "k6", "run", "s.js"}, K6, "--summary-export"},
		{[]string{"k6", "version"}, "", ""},
		{[]string{"node", "scripts/clients/sio-connect.mjs", "--n", "5"}, "", ""},
		{[]string{"sh", "-c", "k6 run x.js"}, "", ""},
	} {
		p, err := Prepare(c.command)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if p.Tool != c.tool {
			t.Errorf("%q: tool %q; want %q", c.command, p.Tool, c.tool)
		}
		run := slices.Index(p.Command, "run")
		switch {
		case c.flag != "" && (run < 0 || p.Command[run+1] != c.flag || p.report == "" || p.Command[run+2] != p.report || p.Note == ""):
			t.Errorf("%q: ran as %q; want %s FILE added after run, and a note", c.command, p.Command, c.flag)
		case c.flag == "" && !slices.Equal(p.Command, c.command):
			t.Errorf("%q: ran as %q; want it unchanged", c.command, p.Command)
		}
	}
	p, _ := Prepare([]string{"k6", "run", "--summary-export=mine.json", "s.js"})
	if p.report != "mine.json" {
		t.Errorf("report %q; want mine.json", p.report)
	}
}

func TestParseJSON(t *testing.T) {
	f, err := ParseJSON(read(t, "client.json"))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "-client-json", 1, 1, 100, 50)
	f, err = ParseJSON([]byte(`{"ok": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "-client-json", -1, 3, -1, -1)
	for _, bad := range []string{`{"ok":-1}`, `{"attempts":1,"ok":2}`, `{"connected":1}`, `[1]`, `{"ok":1}{"ok":2}`, ``} {
		if _, err := ParseJSON([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestTail(t *testing.T) {
	var tl Tail
	big := strings.Repeat("x", TailSize)
	fmt.Fprint(&tl, big)
	fmt.Fprint(&tl, "last line\n")
	got := tl.Bytes()
	if len(got) != TailSize || !strings.HasSuffix(string(got), "last line\n") {
		t.Errorf("kept %d bytes ending %q; want %d ending with the last line", len(got), got[len(got)-20:], TailSize)
	}
}

// Locust's --csv stats of a real run of scripts/locust/locustfile.py (20
// users, 8 s: 20 connects, 53 trade_updates, none failed), its Socket.IO
// rows counted and its HTTP ones not; and --csv added to a locust command
// without one, or its own prefix read.
func TestLocust(t *testing.T) {
	raw := read(t, "locust/recipe_stats.csv")
	f, err := parseLocust(raw)
	if err != nil {
		t.Fatal(err)
	}
	want(t, f, "", 20, 20, 53, 53)
	failing := strings.Replace(string(raw), "socketio,trade_update,53,0,", "socketio,trade_update,53,3,", 1)
	failing = strings.Replace(failing, "socketio,connect,20,0,", "socketio,connect,20,2,", 1)
	if f, err = parseLocust([]byte(failing)); err != nil {
		t.Fatal(err)
	}
	want(t, f, "", 20, 18, 53, 50)
	http := strings.ReplaceAll(string(raw), "socketio,", "GET,")
	if f, err = parseLocust([]byte(http)); err != nil || f.Known() {
		t.Errorf("HTTP rows only: %+v, %v; want unknown figures", f, err)
	}
	if _, err := parseLocust([]byte("Type,Name\nGET,/\n")); err == nil {
		t.Error("a file without Locust's count columns was read")
	}

	// What it prints as it exits is read first: the last table of a run
	// that printed one every few seconds (5 users, 4 s).
	table, ok := parseLocustTable(read(t, "locust/recipe_stderr.txt"))
	if !ok {
		t.Fatal("no statistics table read")
	}
	want(t, table, "", 5, 5, 7, 7)
	if f, err := readLocust(Output{Stderr: read(t, "locust/recipe_stderr.txt")}, "no-such-file"); err != nil || f.Source != "locust summary" {
		t.Errorf("%+v, %v; want the summary read", f, err)
	}

	p, err := Prepare([]string{"locust", "-f", "l.py", "--headless", "-t", "5s"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Tool != Locust || len(p.Command) != 8 || p.Command[1] != "--csv" || p.report != p.Command[2]+"_stats.csv" || p.Note == "" {
		t.Errorf("ran as %q reading %q; want --csv PREFIX added after locust, PREFIX_stats.csv read", p.Command, p.report)
	}
	own, _ := Prepare([]string{"/usr/bin/locust", "-f", "l.py", "--csv=/tmp/run"})
	if own.report != "/tmp/run_stats.csv" || own.Note != "" {
		t.Errorf("report %q, note %q; want /tmp/run_stats.csv, the command unchanged", own.report, own.Note)
	}
}

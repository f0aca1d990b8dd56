package conns

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/internal/echotest"
	"github.com/knowngood/knowngood/loadgen/internal/proc"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/scripts/harness"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreCurrent(),
		goleak.Cleanup(func(code int) {
			harness.RemoveBuilds()
			os.Exit(code)
		}),
	)
}

var twoSources = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}

// fakeAdmin serves /stats: resident memory before, and perConn bytes more
// for each of the server's active connections after.
func fakeAdmin(t *testing.T, srv *echotest.Server, perConn int64) string {
	t.Helper()
	var calls atomic.Int64
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active := srv.Active.Load()
		rss := int64(50 << 20)
		if calls.Add(1) > 1 {
			rss += perConn * active
		}
		fmt.Fprintf(w, `{"variant":"echo-test","connections_active":%d,"connections_total":%d,"resident_bytes":%d}`, active, calls.Load()*100, rss)
	}))
	t.Cleanup(admin.Close)
	return admin.URL
}

// models are the two ways conns holds connections: a reader goroutine
// each, and gnet's event loops (-loop).
var models = []struct {
	name string
	loop bool
}{{"goroutines", false}, {"loops", true}}

func TestRun(t *testing.T) {
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) { testRun(t, m.loop) })
	}
}

func testRun(t *testing.T, loop bool) {
	for _, start := range []func(testing.TB, echotest.Options) *echotest.Server{echotest.StartWebSocket, echotest.StartTCP} {
		srv := start(t, echotest.Options{})
		t.Run(srv.URL[:strings.Index(srv.URL, ":")], func(t *testing.T) {
			cfg := Config{Common: scenario.Common{URL: srv.URL, Admin: fakeAdmin(t, srv, 3000)}, N: 20, Batch: 8, Sources: twoSources, Hold: 100 * time.Millisecond, Timeout: 5 * time.Second, Loop: loop}
			var notes strings.Builder
			rep, err := Run(context.Background(), cfg, &notes)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Established != 20 || rep.Held != 20 || rep.Failed != 0 || rep.Dropped != 0 || len(rep.Errors) != 0 {
				t.Errorf("established %d, held %d, failed %d, dropped %d, errors %v", rep.Established, rep.Held, rep.Failed, rep.Dropped, rep.Errors)
			}
			if n, errs := timeline.Total(rep.Samples); n != 20 || errs != 0 || len(rep.Samples) == 0 {
				t.Errorf("samples %+v: %d established, %d errors", rep.Samples, n, errs)
			}
			if len(rep.Batches) != 3 || rep.Batches[0].Connections != 8 || rep.Batches[2].Connections != 4 || rep.Batches[2].Established != 4 || rep.EstablishSeconds <= 0 {
				t.Errorf("batches %+v, establish %vs", rep.Batches, rep.EstablishSeconds)
			}
			// Each source address in turn.
			if got := srv.Remotes(); got["127.0.0.1"] != 10 || got["127.0.0.2"] != 10 || len(got) != 2 {
				t.Errorf("the server saw connections from %v, want 10 from each of 127.0.0.1 and 127.0.0.2", got)
			}
			s := rep.Server
			if s == nil || s.RSSSource != "stats" || s.BytesPerConnection == nil || *s.BytesPerConnection != 3000 || *s.ConnectionsActive != 20 || s.Variant != "echo-test" {
				t.Fatalf("server view %+v", s)
			}
			if kib := rep.KiBPerConnection(); *kib != 3000.0/1024 {
				t.Errorf("KiB per connection %v", *kib)
			}
			if onLoop := strings.HasSuffix(rep.Version, loopsClient); onLoop != loop {
				t.Errorf("client %q %q: on loops %v, want %v", rep.Client, rep.Version, onLoop, loop)
			}
			if !strings.Contains(notes.String(), "room for") || !strings.Contains(rep.OpenFiles, "open-files limit") || rep.OpenFilesAllow < 20 {
				t.Errorf("open files: notes %q, report %q, %d", notes.String(), rep.OpenFiles, rep.OpenFilesAllow)
			}
			// Every connection is closed at the end.
			deadline := time.Now().Add(5 * time.Second)
			for srv.Active.Load() != 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := srv.Active.Load(); n != 0 {
				t.Errorf("%d connections still open on the server", n)
			}
		})
	}
}

// TestRunPID: the target's RSS from /proc (this process's, here).
func TestRunPID(t *testing.T) {
	srv := echotest.StartWebSocket(t, echotest.Options{})
	rep, err := Run(context.Background(), Config{Common: scenario.Common{URL: srv.URL}, N: 5, Batch: 5, Timeout: 5 * time.Second, PID: os.Getpid()}, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Server; s == nil || s.RSSSource != "proc" || *s.RSSBefore <= 0 || s.BytesPerConnection == nil || rep.ServerError != "" {
		t.Errorf("server view %+v, error %q", s, rep.ServerError)
	}
}

// TestRunDroppedAndFailed: connections the server closes while held are
// dropped; a dial nobody answers fails, with its first error.
func TestRunDroppedAndFailed(t *testing.T) {
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) { testRunDroppedAndFailed(t, m.loop) })
	}
}

func testRunDroppedAndFailed(t *testing.T, loop bool) {
	for _, start := range []func(testing.TB, echotest.Options) *echotest.Server{echotest.StartWebSocket, echotest.StartTCP} {
		srv := start(t, echotest.Options{CloseIdleAfter: 50 * time.Millisecond})
		rep, err := Run(context.Background(), Config{Common: scenario.Common{URL: srv.URL}, N: 6, Batch: 3, Hold: 500 * time.Millisecond, Timeout: 5 * time.Second, Loop: loop}, new(strings.Builder))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Established != 6 || rep.Dropped != 6 || rep.Held != 0 || rep.Errors[kindDropped].Count != 6 {
			t.Errorf("%s: established %d, dropped %d, held %d, errors %v", srv.URL, rep.Established, rep.Dropped, rep.Held, rep.Errors)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rep, err := Run(context.Background(), Config{Common: scenario.Common{URL: "ws://" + addr + "/"}, N: 4, Batch: 4, Sources: twoSources, Timeout: 5 * time.Second, Loop: loop}, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Errors[target.KindRefused]; rep.Failed != 4 || rep.Held != 0 || f.Count != 4 || !strings.Contains(f.First, "connection refused") {
		t.Errorf("failed %d, held %d, errors %v", rep.Failed, rep.Held, rep.Errors)
	}
}

// TestOpenFilesCheck: an -n beyond the open-files limit is refused before
// any dial, with a message that names -n and the limit.
func TestOpenFilesCheck(t *testing.T) {
	files, err := proc.OpenFiles()
	if err != nil {
		t.Skip(err)
	}
	n := files.Allows() + 1
	if n > maxN {
		t.Skipf("an open-files limit of %d is beyond -n's range", files.Soft)
	}
	var notes strings.Builder
	_, err = Run(context.Background(), Config{Common: scenario.Common{URL: "ws://127.0.0.1:1/"}, N: n, Batch: 1000, Timeout: time.Second}, &notes)
	want := fmt.Sprintf("-n %d is more than the open-files limit allows: open-files limit %d", n, files.Soft)
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Run with -n %d: %v; want one line with %q", n, err, want)
	}
	if !strings.Contains(notes.String(), fmt.Sprintf("room for %d connections", n-1)) {
		t.Errorf("notes %q do not say how many connections the limit allows", notes.String())
	}
}

// TestRunFreeOSMemory: with -free-os-memory the RSS is read again once the
// target has returned its free memory (a knowngood target with -pprof);
// without -pprof the report says why there is no second reading. The RSS
// is the target process's, from /proc.
func TestRunFreeOSMemory(t *testing.T) {
	for _, pprof := range []bool{true, false} {
		tg := harness.Start(t, "-variant", "echo-gorilla", fmt.Sprintf("-pprof=%v", pprof))
		cfg := Config{Common: scenario.Common{URL: "ws://" + tg.Addr + "/", Admin: tg.AdminURL()}, N: 10, Batch: 10, Timeout: 5 * time.Second, PID: tg.PID(), FreeOSMemory: true}
		rep, err := Run(context.Background(), cfg, new(strings.Builder))
		if err != nil {
			t.Fatal(err)
		}
		s := rep.Server
		if s == nil || s.BytesPerConnection == nil {
			t.Fatalf("-pprof=%v: server view %+v, error %q", pprof, s, rep.ServerError)
		}
		if pprof && (s.RSSAfterFree == nil || *s.RSSAfterFree <= 0 || s.BytesPerConnectionAfterFree == nil || rep.ServerError != "") {
			t.Errorf("-pprof: after freeing %v, per connection %v, error %q", s.RSSAfterFree, s.BytesPerConnectionAfterFree, rep.ServerError)
		}
		if !pprof && (s.RSSAfterFree != nil || !strings.Contains(rep.ServerError, "-pprof")) {
			t.Errorf("no -pprof: after freeing %v, error %q; want none, and an error naming -pprof", s.RSSAfterFree, rep.ServerError)
		}
	}
}

// TestRunSocketIO: on a Socket.IO URL, conns holds Socket.IO sockets: the
// server acknowledged every namespace CONNECT, and over a hold of several
// ping intervals the client's pongs keep every socket (none dropped for
// ping timeout). The margin: the hold is 5 intervals of 100 ms, each with
// 300 ms for the pong.
// On the loops the sockets are the lean client's, from the -sources
// given.
func TestRunSocketIO(t *testing.T) {
	tg := harness.Start(t, "-variant", "empty", "-ping-interval", "100ms", "-ping-timeout", "300ms")
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) { testRunSocketIO(t, tg, m.loop) })
	}
}

func testRunSocketIO(t *testing.T, tg *harness.Process, loop bool) {
	client, sources := sioClientName, []netip.Addr(nil)
	if loop {
		client, sources = leanClientName, twoSources
	}
	for _, ns := range []string{"/", "/custom"} {
		t.Run(ns, func(t *testing.T) {
			url := "ws://" + tg.Addr + "/socket.io/?EIO=4&transport=websocket"
			cfg := Config{Common: scenario.Common{URL: url, Admin: tg.AdminURL()}, N: 20, Batch: 8, Hold: 500 * time.Millisecond, Timeout: 10 * time.Second, Namespace: ns,
				Loop: loop, Sources: sources}
			rep, err := Run(context.Background(), cfg, new(strings.Builder))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Established != 20 || rep.Held != 20 || rep.Dropped != 0 || len(rep.Errors) != 0 {
				t.Errorf("established %d, held %d, dropped %d, errors %v", rep.Established, rep.Held, rep.Dropped, rep.Errors)
			}
			s := rep.Server
			if s == nil || *s.HandshakesOK != 20 || *s.ConnectionsActive != 20 || rep.Namespace != ns || rep.Client != client {
				t.Fatalf("server view %+v, report namespace %q client %q", s, rep.Namespace, rep.Client)
			}
			for _, v := range rep.Verdicts {
				if v.Loss {
					t.Errorf("a loss: %+v", v)
				}
			}
			var b strings.Builder
			if err := rep.WriteTable(&b); err != nil || !strings.Contains(b.String(), "20 idle Socket.IO sockets (namespace "+ns+")") ||
				!strings.Contains(b.String(), "20 acknowledged") {
				t.Errorf("table (%v):\n%s", err, b.String())
			}
		})
	}
}

// TestLoopHoldsThroughPings: on the loops, a real target's pings are
// answered, so a hold far longer than its ping interval and timeout
// keeps every connection.
func TestLoopHoldsThroughPings(t *testing.T) {
	tg := harness.Start(t, "-variant", "echo-gorilla", "-ping-interval", "100ms", "-ping-timeout", "100ms")
	cfg := Config{Common: scenario.Common{URL: "ws://" + tg.Addr + "/", Admin: tg.AdminURL()}, N: 10, Batch: 10, Hold: time.Second, Timeout: 5 * time.Second, Loop: true}
	rep, err := Run(context.Background(), cfg, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Established != 10 || rep.Held != 10 || rep.Dropped != 0 || len(rep.Errors) != 0 {
		t.Errorf("established %d, held %d, dropped %d, errors %v; want all 10 held through the pings", rep.Established, rep.Held, rep.Dropped, rep.Errors)
	}
	if s := rep.Server; s == nil || *s.ConnectionsActive != 10 {
		t.Errorf("server view %+v", s)
	}
}

// TestRunEchoAndGet: against a knowngood WebSocket target, -echo counts a
// connection once its message came back (the server echoed one per
// connection), on the loops and on goroutines; -get sends one GET per TCP
// connection, which the target answers 426 and counts as a failed
// handshake: with -status 426 every one counts, with the default 200 none
// does, each failure named by its status. Every run reports the connect
// times and the rate.
func TestRunEchoAndGet(t *testing.T) {
	tg := harness.Start(t, "-variant", "echo-gorilla")
	base := Config{Common: scenario.Common{URL: "ws://" + tg.Addr + "/", Admin: tg.AdminURL()}, N: 20, Batch: 20, Timeout: 10 * time.Second, Echo: 128}
	for _, loop := range []bool{true, false} {
		cfg := base
		cfg.Loop = loop
		before := tg.Stats(t)
		rep, err := Run(context.Background(), cfg, new(strings.Builder))
		if err != nil {
			t.Fatal(err)
		}
		d := tg.Settled(t, before)
		if got := d.MessagesReceived; rep.Established != 20 || got != 20 {
			t.Errorf("-echo, loop %v: established %d, server received %d messages; want 20 and 20 (errors %v)", loop, rep.Established, got, rep.Errors)
		}
		checkConnect(t, rep)
	}
	get := base
	get.URL, get.Echo, get.Get, get.Status = "http://"+tg.Addr+"/", 0, true, 426
	rep, err := Run(context.Background(), get, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Established != 20 || rep.Held != 0 || rep.Dropped != 0 || !hasKind(rep, "agree") {
		t.Errorf("-get -status 426: established %d, held %d, dropped %d, verdicts %v; want 20, 0, 0 and agreement", rep.Established, rep.Held, rep.Dropped, rep.Verdicts)
	}
	checkConnect(t, rep)
	get.Status = 200
	rep, err = Run(context.Background(), get, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Established != 0 || rep.Connect != nil || len(rep.Errors) != 1 || !strings.Contains(fmt.Sprint(rep.Errors), "GET answered HTTP 426 Upgrade Required, not the -status 200") {
		t.Errorf("-get -status 200: established %d, connect %v, errors %v; want none, and the 426s named", rep.Established, rep.Connect, rep.Errors)
	}
}

// checkConnect checks that a run that established connections gives
// their times in order and a rate.
func checkConnect(t *testing.T, rep *Report) {
	t.Helper()
	c := rep.Connect
	if c == nil || c.P50 <= 0 || c.P50 > c.P99 || c.P99 > c.Max || c.Mean <= 0 || c.Mean > c.Max || rep.ConnectsPerSecond <= 0 || len(rep.ConnectHistogram) == 0 {
		t.Errorf("connect times %+v, rate %v, histogram %v", c, rep.ConnectsPerSecond, rep.ConnectHistogram)
	}
	var n int64
	for _, b := range rep.ConnectHistogram {
		n += b.Count
	}
	if n != int64(rep.Established) {
		t.Errorf("the connect histogram holds %d, established %d", n, rep.Established)
	}
}

func hasKind(rep *Report, kind string) bool {
	for _, v := range rep.Verdicts {
		if v.Kind == kind {
			return true
		}
	}
	return false
}

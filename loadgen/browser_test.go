package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/shared/browser"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestReportsInBrowser opens every -html page loadgen writes in Chromium:
// each scenario's (handshake, echo, conns, broadcast, and merge's) against
// a real target with its server columns, the many-run page of an
// experiment, and a page of latency distributions of every width. Each
// must load with no console error, and no text of its charts may be cut
// off by the chart's edge or overlap another text, by the boxes the
// browser lays them out in. HTMLREPORT_OUT=DIR keeps the pages.
func TestReportsInBrowser(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("HTMLREPORT_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	// Each run but merge has a target of its own, the two shards one
	// between them: the runs go at once, and a target's /stats before and
	// after one run must count that run alone.
	sio, echo, conns, bc, sharded := startTarget(t, "empty"), startTarget(t, "echo-gorilla"), startTarget(t, "echo-gorilla"),
		startTarget(t, "broadcast-gorilla"), startTarget(t, "echo-gorilla")
	shard := func(i int) string { return filepath.Join(dir, "shard"+strconv.Itoa(i)+".json") }
	html := func(name string) string { return filepath.Join(dir, name+".html") }
	runs := [][]string{
		{"handshake", "-html", html("handshake"), "-url", sio.url, "-admin", sio.admin, "-n", "20", "-transport", "websocket"},
		{"echo", "-html", html("echo"), "-url", echo.ws, "-admin", echo.admin, "-c", "4", "-duration", "2s", "-warmup", "0s"},
		{"conns", "-html", html("conns"), "-url", conns.ws, "-admin", conns.admin, "-n", "20", "-batch", "10", "-hold", "1s"},
		{"broadcast", "-html", html("broadcast"), "-url", "ws://" + bc.addr + "/", "-admin", bc.admin, "-subscribers", "10", "-senders", "2", "-rate", "40", "-duration", "2s"},
	}
	for i := 1; i <= 2; i++ { // both shards at once, as a sharded run goes
		runs = append(runs, []string{"echo", "-url", sharded.ws, "-admin", sharded.admin, "-shard", strconv.Itoa(i) + "/2", "-c", "4", "-duration", "1s", "-warmup", "0s", "-json", shard(i)})
	}
	// Most of each run is a timed window: they go at once, on goroutines
	// (in this test's slot of -parallel, not each waiting for one), while
	// the browser starts. The deferred wait holds the targets until every
	// run is done, even when the test ends early (no browser).
	failed := make([]string, len(runs))
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, args := range runs {
		wg.Go(func() {
			var stdout, stderr strings.Builder
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				failed[i] = fmt.Sprintf("loadgen %q: exit %d\n%s", args, code, stderr.String())
			}
		})
	}
	b := browser.For(t)
	wg.Wait()
	for _, f := range failed {
		if f != "" {
			t.Error(f)
		}
	}
	if t.Failed() {
		return
	}
	// Flags before merge's files, which end its flags.
	report(t, "merge", "-html", html("merge"), shard(1), shard(2))
	writeExperimentPage(t, html("experiment"))
	writeDistributionsPage(t, html("distributions"))

	for _, name := range []string{"handshake", "echo", "conns", "broadcast", "merge", "experiment", "distributions"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each page is a tab of its own
			p := b.Open(t, "file://"+html(name))
			if n := p.TextLayout(t); n == 0 {
				t.Errorf("no chart text on the page")
			}
			p.NoProblems(t)
		})
	}
}

// writeExperimentPage writes the page an experiment writes: three groups
// of runs at four concurrencies, as make experiment-handshake does.
func writeExperimentPage(t *testing.T, path string) {
	var runs []htmlreport.Run
	for gi, group := range []string{"empty, loadgen", "blocking, python-socketio", "blocking, socket.io-client (JS)"} {
		for _, n := range []int{50, 100, 200, 500} {
			ok := n * (3 - gi) / 3
			runs = append(runs, htmlreport.Run{Name: group + ", n=" + strconv.Itoa(n), Group: group, Concurrency: n, Attempts: n, Succeeded: ok,
				Counts: []htmlreport.Count{{Name: "connected", Client: float64(ok), Server: htmlreport.FloatOf(ptr(uint64(ok)))}, {Name: "failed", Client: float64(n - ok)}}})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := htmlreport.WriteHTML(f, "handshake experiment: "+strings.Repeat("success vs concurrency ", 2), runs); err != nil {
		t.Fatal(err)
	}
}

// writeDistributionsPage writes a page of latency distributions of every
// width loadgen's 1-2-5 buckets give, from 1 µs and from 100 µs (wider
// labels) up to 50 s: how many bars a run's chart has depends on how its
// latencies spread, which a busy machine widens.
func writeDistributionsPage(t *testing.T, path string) {
	var bounds []int64
	for decade := int64(1); decade <= 1e7; decade *= 10 {
		bounds = append(bounds, decade, 2*decade, 5*decade)
	}
	var runs []htmlreport.Run
	for _, from := range []int{0, 6} { // 1 µs, 100 µs
		for to := from; to < len(bounds); to++ {
			var buckets []protocol.Bucket
			for i := from; i <= to; i++ {
				buckets = append(buckets, protocol.Bucket{UpToMicros: bounds[i], Count: int64(1 + i%3)})
			}
			runs = append(runs, htmlreport.Run{Name: strconv.Itoa(len(buckets)) + " buckets", Distribution: buckets})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := htmlreport.WriteHTML(f, "latency distributions", runs); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.Cleanup(func(code int) {
		harness.RemoveBuilds()
		os.Exit(code)
	}))
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-frameworks", "gorilla,nope"}, "nope"},
		{[]string{"-scenarios", "echo,fast"}, "fast"},
		{[]string{"-reps", "0"}, "-reps"},
		{[]string{"-shards", "3", "-conns", "2"}, "-shards"},
		{[]string{"-heartbeat", "0s"}, "-heartbeat"},
	} {
		_, err := parseFlags(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %q", c.args, err, c.want)
		}
	}
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	for key := range theReport {
		if !strings.Contains(strings.Join(keysOf(o.subjects), ","), key) {
			t.Errorf("the report's row %s has no server by default", key)
		}
	}
}

// TestTables checks the ratios, the ordering and the naming of the
// bounded side on figures made up for it.
func TestTables(t *testing.T) {
	o, err := parseFlags([]string{"-frameworks", "gorilla,netty,node-ws,websockets", "-reps", "1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range o.subjects {
		o.subjects[i].available = func() error { return nil }
	}
	o.subjects[3].available = func() error { return errors.New("python3-websockets is missing") }
	res := results{}
	add := func(key string, sync, async, kib, p50 float64, client float64) {
		res.add(key, map[string]sample{
			partSync:    {rate: sync, clientCPU: client, serverCPU: 50, held: 1, asked: 1},
			partAsync:   {rate: async, clientCPU: 40, serverCPU: 95, held: 1, asked: 1},
			partConns:   {kib: kib, held: 100, asked: 100},
			partLatency: {p50: p50, p99: 2 * p50, held: 100, asked: 100},
		})
	}
	add("gorilla", 10000, 20000, 10, 1, 95)
	add("netty", 20000, 40000, 40, 0.5, 50)
	add("node-ws", 5000, 30000, 5, 2, 50)
	var b bytes.Buffer
	writeTables(&b, o, res)
	out := b.String()
	t.Log(out)
	for _, want := range []string{
		"| gorilla/websocket | ", "| 10000 | 1.00 | 1.00 | 95 / 50 | 20000 | 1.00 | 1.00 | 40 / 95 | sync: client, async: server |",
		"| Netty | ", "| 20000 | 2.00 | 1.39 |",
		// Memory: gorilla's 10 KiB over Netty's 40.
		"| 100 of 100 | 40.0 | 0.25 | 300k | 1.43 |",
		"| echo sync | Netty > gorilla/websocket > ws (Node) | 3 of 3 |  |",
		"| echo async | Netty > ws (Node) > gorilla/websocket | 2 of 3 | ws (Node) above gorilla/websocket |",
		"cannot run here: python3-websockets is missing",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
}

// TestSmall is make experiment-frameworks in small: every framework of
// the report that can run here (make deps installs them all) and two of
// knowngood's targets, each scenario once and briefly. It checks that
// each measured something on its own side and that the tables hold every
// row; the figures are the experiment's, not the test's.
func TestSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every framework's server: 1-2 minutes")
	}
	t.Chdir("../../..")
	o, err := parseFlags([]string{"-frameworks", strings.Join(append(reportKeys(), "echo-gorilla", sioTarget), ","), "-reps", "1",
		"-duration", "1s", "-warmup", "200ms", "-conns", "200", "-batch", "100", "-shards", "2", "-hold", "1s",
		"-latency-conns", "50", "-heartbeat", "500ms"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range o.subjects {
		if err := s.available(); err != nil {
			t.Errorf("%s cannot run (make deps installs it): %v", s.row, err)
		}
	}
	if t.Failed() {
		return
	}
	bins, err := benchrun.Build(os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, o, bins, &out, tlog{t}); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, s := range o.subjects {
		if strings.Contains(out.String(), "| "+s.row+" | failed") || !strings.Contains(out.String(), "| "+s.row+" | ") {
			t.Errorf("%s: no figures", s.row)
		}
	}
	if strings.Contains(out.String(), "failed (") {
		t.Errorf("a run failed:\n%s", out.String())
	}
}

func reportKeys() []string {
	var out []string
	for _, s := range allSubjects() {
		if _, ok := theReport[s.key]; ok {
			out = append(out, s.key)
		}
	}
	return out
}

// tlog writes the run's progress to the test's log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

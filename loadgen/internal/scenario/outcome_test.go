package scenario

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/threshold"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
)

// judgedReport is a report whose outcome the test sets.
type judgedReport struct {
	Checks
	out Outcome
}

func (r *judgedReport) WriteTable(w io.Writer) error {
	_, err := io.WriteString(w, "table\n")
	return err
}
func (r *judgedReport) WriteJSON(w io.Writer) error { return json.NewEncoder(w).Encode(r) }
func (r *judgedReport) Outcome() Outcome            { return r.out }

var judgedMetrics = []threshold.Metric{{Name: "success", Kind: threshold.Share}, {Name: "p99", Kind: threshold.Duration}}

type judgedConfig struct{ Common }

func judgedCommand(out Outcome) Command {
	newFlagSet := func(c *judgedConfig) *flag.FlagSet {
		fs := NewFlagSet("judged")
		c.Register(fs, Words{DefaultURL: "ws://127.0.0.1:1/", Metrics: judgedMetrics})
		return fs
	}
	parse := func(args []string) (judgedConfig, error) {
		return Parse(args, newFlagSet, func(*judgedConfig, map[string]bool) error { return nil })
	}
	run := func(context.Context, judgedConfig, io.Writer) (*judgedReport, error) {
		return &judgedReport{out: out}, nil
	}
	return NewCommand("judged", parse, func(io.Writer) {}, run, CommonFiles[judgedConfig])
}

func TestOutcomeExitStatus(t *testing.T) {
	// A port that takes connections, and one that refuses them.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "ws://" + closed.Addr().String() + "/"
	closed.Close()
	open := "ws://" + ln.Addr().String() + "/"

	good := Outcome{Attempts: 10, Connected: 10, Metrics: threshold.Values{"success": 1, "p99": 12.3}}
	for _, c := range []struct {
		name   string
		out    Outcome
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"pass", good, nil, 0, "table\n", ""},
		{"thresholds hold", good, []string{"-threshold", "success>=99.9%", "-threshold", "p99<50ms"}, 0,
			"table\n✓ success>=99.9% (success = 100%)\n✓ p99<50ms (p99 = 12.3ms)\n", ""},
		{"threshold crossed", good, []string{"-threshold", "p99<10ms"}, 1,
			"table\n✗ p99<10ms (p99 = 12.3ms)\n", "loadgen judged: failed: 1 of 1 thresholds crossed\n"},
		{"no value", Outcome{Attempts: 1, Connected: 1}, []string{"-threshold", "p99<10ms"}, 1,
			"table\n✗ p99<10ms (p99 = none: the run did not measure it)\n", "loadgen judged: failed: 1 of 1 thresholds crossed\n"},
		{"loss", Outcome{Attempts: 1, Connected: 1, Verdicts: []verdict.Verdict{{Kind: "faults"}, {Kind: "replies-lost-client-side", Loss: true}}}, nil, 1,
			"table\n", "loadgen judged: failed: the verdicts found a loss: replies-lost-client-side\n"},
		{"nothing", Outcome{Attempts: 1, Connected: 1, Nothing: "no message was echoed"}, nil, 1,
			"table\n", "loadgen judged: failed: no message was echoed\n"},
		{"none connected, target up", Outcome{Attempts: 5}, []string{"-url", open}, 1,
			"table\n", "loadgen judged: failed: none of the 5 connections was established\n"},
		{"none connected, refused", Outcome{Attempts: 5}, []string{"-url", refused}, 3,
			"table\n", "loadgen judged: could not reach the target: dial tcp " + closed.Addr().String() + ": connect: connection refused\n"},
		{"bad threshold", good, []string{"-threshold", "p98<1ms"}, 2,
			"", `loadgen judged: invalid value "p98<1ms" for flag -threshold: unknown metric "p98"; the metrics: success, p99` + "\n"},
	} {
		var stdout, stderr strings.Builder
		code := judgedCommand(c.out).Main(context.Background(), c.args, &stdout, &stderr)
		if code != c.code || stdout.String() != c.stdout || stderr.String() != c.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.name, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
	}

	// -json records the thresholds.
	var stdout strings.Builder
	judgedCommand(good).Main(context.Background(), []string{"-json", "-", "-threshold", "p99<10ms"}, &stdout, io.Discard)
	var got struct{ Thresholds []threshold.Result }
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil || len(got.Thresholds) != 1 {
		t.Fatalf("%q: %v", stdout.String(), err)
	}
	if r := got.Thresholds[0]; r.Expr != "p99<10ms" || r.Metric != "p99" || r.OK || r.Value == nil || *r.Value != 12.3 || r.Unit != "ms" {
		t.Errorf("JSON threshold %+v", r)
	}
}

func TestHostPort(t *testing.T) {
	for raw, want := range map[string]string{
		"ws://127.0.0.1:8080/x": "127.0.0.1:8080", "http://example.com": "example.com:80",
		"wss://example.com/": "example.com:443", "tls://example.com": "example.com:443", "tcp://[::1]:7": "[::1]:7",
	} {
		if got, err := hostPort(raw); got != want || err != nil {
			t.Errorf("hostPort(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	if _, err := hostPort("::"); err == nil {
		t.Error("hostPort(::): no error")
	}
}

// TestConnections: the connection metrics' values, and no success share
// of nothing tried.
func TestConnections(t *testing.T) {
	out := Connections(4, 3, 1, 0.5, nil)
	want := threshold.Values{"ok": 3, "failed": 1, "success": 0.75, "client_cpu": 0.5}
	if out.Attempts != 4 || out.Connected != 3 || len(out.Metrics) != len(want) {
		t.Fatalf("outcome %+v", out)
	}
	for k, v := range want {
		if out.Metrics[k] != v {
			t.Errorf("%s = %v, want %v", k, out.Metrics[k], v)
		}
	}
	if _, ok := Connections(0, 0, 0, 0, nil).Metrics["success"]; ok {
		t.Error("a success share of no attempts")
	}
}

package main

// The exit status a CI step reads, from real runs against real targets:
// 0 for a clean run, 1 for a run that crossed a -threshold or lost
// messages, 2 for a bad -threshold, 3 for a target that is not there; in
// every scenario and in watch.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/threshold"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
)

// refused is an address nothing listens on.
const refused = "127.0.0.1:1"

// exit runs loadgen in this process and checks its exit status; it returns
// what it printed.
func exit(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut strings.Builder
	if code := run(context.Background(), args, &out, &errOut); code != want {
		t.Fatalf("loadgen %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// contains checks that s has each of want.
func contains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s has no %q:\n%s", what, w, s)
		}
	}
}

func TestExitHandshake(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "empty")
	args := []string{"handshake", "-url", tg.url, "-admin", tg.admin, "-n", "10", "-deadline", "10s", "-transport", "websocket"}
	out, _ := exit(t, 0, append(args, "-threshold", "success>=100%", "-threshold", "p99<10s", "-threshold", "failed==0")...)
	contains(t, "stdout", out, "✓ success>=100% (success = 100%)\n", "✓ p99<10s (p99 = ", "✓ failed==0 (failed = 0)\n")

	out, errOut := exit(t, 1, append(args, "-threshold", "success>=100%", "-threshold", "p99<1us", "-json", "-")...)
	contains(t, "stderr", errOut, "✓ success>=100% (success = 100%)\n", "✗ p99<1us (p99 = ", "loadgen handshake: failed: 1 of 2 thresholds crossed\n")
	var rep struct{ Thresholds []threshold.Result }
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if r := rep.Thresholds; len(r) != 2 || !r[0].OK || r[1].OK || r[1].Expr != "p99<1us" || r[1].Metric != "p99" || r[1].Value == nil || *r[1].Value <= 0.001 || r[1].Unit != "ms" {
		t.Errorf("JSON thresholds %+v", r)
	}

	_, errOut = exit(t, 3, "handshake", "-url", "http://"+refused, "-admin", "", "-n", "3", "-deadline", "5s", "-transport", "websocket")
	contains(t, "stderr", errOut, "loadgen handshake: could not reach the target: dial tcp "+refused+": connect: connection refused\n")
}

func TestExitEcho(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "echo-gorilla")
	args := []string{"echo", "-url", tg.ws, "-admin", tg.admin, "-c", "2", "-mode", "pipelined", "-duration", "300ms", "-warmup", "0s", "-timeout", "2s"}
	out, _ := exit(t, 0, append(args, "-threshold", "lost==0", "-threshold", "success==100%", "-threshold", "rate>0")...)
	contains(t, "stdout", out, "✓ lost==0 (lost = 0)\n", "✓ success==100% (success = 100%)\n", "✓ rate>0 (rate = ")
	exit(t, 1, append(args, "-threshold", "messages>1e12")...)

	_, errOut := exit(t, 3, "echo", "-url", "ws://"+refused+"/", "-admin", "", "-c", "2", "-duration", "200ms", "-warmup", "0s")
	contains(t, "stderr", errOut, "loadgen echo: could not reach the target: dial tcp "+refused)
}

// TestExitEchoFaultDrop: messages the target drops on purpose are a loss
// the verdict names, and the run fails.
func TestExitEchoFaultDrop(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "echo-gorilla", "-fault-drop", "0.05")
	out, errOut := exit(t, 1, "echo", "-url", tg.ws, "-admin", tg.admin, "-c", "2", "-mode", "pipelined", "-duration", "300ms",
		"-warmup", "0s", "-timeout", "500ms", "-json", "-")
	contains(t, "stderr", errOut, "loadgen echo: failed: the verdicts found a loss: faults\n", "the server injected")
	var rep struct{ Verdicts []verdict.Verdict }
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	found := false
	for _, v := range rep.Verdicts {
		found = found || (v.Kind == verdict.Faults && v.Loss && strings.Contains(v.Text, "drop"))
	}
	if !found {
		t.Errorf("no faults verdict with loss naming drop: %+v", rep.Verdicts)
	}
}

func TestExitConns(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "echo-gorilla")
	args := []string{"conns", "-url", tg.ws, "-admin", tg.admin, "-n", "5", "-batch", "5", "-hold", "0s"}
	out, _ := exit(t, 0, append(args, "-threshold", "success==100%", "-threshold", "held==5")...)
	contains(t, "stdout", out, "✓ success==100% (success = 100%)\n", "✓ held==5 (held = 5)\n")
	out, _ = exit(t, 1, append(args, "-threshold", "ok>5")...)
	contains(t, "stdout", out, "✗ ok>5 (ok = 5)\n")

	_, errOut := exit(t, 3, "conns", "-url", "ws://"+refused+"/", "-admin", "", "-n", "3", "-hold", "0s")
	contains(t, "stderr", errOut, "loadgen conns: could not reach the target: dial tcp "+refused)
}

func TestExitBroadcast(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "broadcast-gorilla")
	ws := "ws://" + tg.addr + "/"
	args := []string{"broadcast", "-url", ws, "-admin", tg.admin, "-subscribers", "10", "-senders", "1", "-rate", "20", "-duration", "500ms"}
	out, _ := exit(t, 0, append(args, "-threshold", "lost==0", "-threshold", "delivery==100%", "-threshold", "dup==0")...)
	contains(t, "stdout", out, "✓ lost==0 (lost = 0)\n", "✓ delivery==100% (delivery = 100%)\n")
	out, _ = exit(t, 1, append(args, "-threshold", "p99<1ns")...)
	contains(t, "stdout", out, "✗ p99<1ns (p99 = ")

	_, errOut := exit(t, 3, "broadcast", "-url", "ws://"+refused+"/", "-admin", "", "-subscribers", "3", "-senders", "1", "-duration", "100ms", "-timeout", "1s")
	contains(t, "stderr", errOut, "loadgen broadcast: could not reach the target: dial tcp "+refused)
}

func TestExitWatch(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "empty")
	args := []string{"watch", "-admin", tg.admin, "-settle", "2s"}
	out, _ := exit(t, 0, append(args, "-threshold", "exit_code==0", "--", "true")...)
	contains(t, "stdout", out, "✓ exit_code==0 (exit_code = 0)\n")
	_, errOut := exit(t, 1, append(args, "--", "false")...)
	contains(t, "stderr", errOut, "loadgen watch: failed: the command exited 1\n")
	out, errOut = exit(t, 1, append(args, "-threshold", "server_ok>0", "--", "true")...)
	contains(t, "stdout", out, "✗ server_ok>0 (server_ok = 0)\n")
	contains(t, "stderr", errOut, "loadgen watch: failed: 1 of 1 thresholds crossed\n")

	_, errOut = exit(t, 3, "watch", "-admin", "http://"+refused, "--", "true")
	contains(t, "stderr", errOut, "loadgen watch: could not reach the target: no /stats from http://"+refused+" before the command")
}

// TestExitBadThreshold: a bad -threshold is a usage error (2) on one
// line that names the flag and, for an unknown metric, lists the
// scenario's.
func TestExitBadThreshold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"handshake", "-threshold", "p98<1ms"}, `loadgen handshake: invalid value "p98<1ms" for flag -threshold: unknown metric "p98"; the metrics: success, ok, failed, echoed`},
		{[]string{"echo", "-threshold", "p99<50"}, `loadgen echo: invalid value "p99<50" for flag -threshold: p99: "50": want a duration with its unit`},
		{[]string{"conns", "-threshold", "success>=99"}, `loadgen conns: invalid value "success>=99" for flag -threshold: success: "99": want a share`},
		{[]string{"broadcast", "-threshold", "lost=0"}, `loadgen broadcast: invalid value "lost=0" for flag -threshold: no operator after "lost"`},
		{[]string{"broadcast", "-threshold", "lost==1e999"}, `loadgen broadcast: invalid value "lost==1e999" for flag -threshold: lost: "1e999": want a number`},
		{[]string{"watch", "-admin", "http://" + refused, "-threshold", "p95<1s", "--", "true"}, `loadgen watch: invalid value "p95<1s" for flag -threshold: unknown metric "p95"; the metrics: exit_code, seconds,`},
	} {
		_, errOut := exit(t, 2, c.args...)
		if !strings.HasPrefix(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("loadgen %q: stderr %q; want one line starting %q", c.args, errOut, c.want)
		}
	}
}

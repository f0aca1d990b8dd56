package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The report texts as a new user reads them: each test runs a scenario
// against a real target and checks what the table says, and does not.

// report runs loadgen with args and returns its table (stdout); it fails
// the test unless loadgen exits 0.
func report(t *testing.T, args ...string) string {
	t.Helper()
	return reportExit(t, []int{0}, args...)
}

// reportExit is report for a run that may fail (exit 1): its report is
// printed all the same, and its wording is what the test reads.
func reportExit(t *testing.T, codes []int, args ...string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	if code := run(context.Background(), args, &stdout, &stderr); !slices.Contains(codes, code) {
		t.Fatalf("loadgen %q: exit %d, want one of %v\n%s", args, code, codes, stderr.String())
	}
	t.Logf("loadgen %q:\n%s", args, stdout.String())
	return stdout.String()
}

// says fails the test unless text has every one of want and none of not.
func says(t *testing.T, text string, want []string, not ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the report does not say %q:\n%s", w, text)
		}
	}
	for _, n := range not {
		if strings.Contains(text, n) {
			t.Errorf("the report says %q:\n%s", n, text)
		}
	}
}

// scenarioLines are the usage's scenario lines.
var scenarioLines = []string{
	"handshake: ", "echo:      ", "conns:     ", "broadcast: ", "watch:     ", "merge:     ",
	"reconcile: reconcile a saved /stats snapshot with counts typed after the run",
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		code   int
		stdout bool // the usage goes to stdout (asked for), else stderr
		first  string
	}{
		{nil, 2, false, "usage: loadgen SCENARIO [flags]"},
		{[]string{"-h"}, 0, true, "usage: loadgen SCENARIO [flags]"},
		{[]string{"--help"}, 0, true, "usage: loadgen SCENARIO [flags]"},
		{[]string{"help"}, 0, true, "usage: loadgen SCENARIO [flags]"},
		{[]string{"soak"}, 2, false, `loadgen: unknown scenario "soak"`},
		{[]string{"help", "soak"}, 2, false, `loadgen: unknown scenario "soak"`},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tc.args, &stdout, &stderr)
		out, other := stderr.String(), stdout.String()
		if tc.stdout {
			out, other = other, out
		}
		if code != tc.code || !strings.HasPrefix(out, tc.first) || other != "" {
			t.Errorf("loadgen %q: exit %d, stdout %q, stderr %q; want exit %d and %q first", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.first)
			continue
		}
		for _, line := range scenarioLines {
			if !strings.Contains(out, "\n  "+line) {
				t.Errorf("loadgen %q does not list %q:\n%s", tc.args, line, out)
			}
		}
	}
	var stdout strings.Builder
	if code := run(context.Background(), []string{"help", "echo"}, &stdout, new(strings.Builder)); code != 0 || !strings.HasPrefix(stdout.String(), "usage: loadgen echo") {
		t.Errorf("loadgen help echo: exit %d, %q", code, stdout.String())
	}
}

// TestReportRefusedAtCap: a target at its -max-conns cap answers 503;
// every scenario's error tally says so, never "bad handshake".
func TestReportRefusedAtCap(t *testing.T) {
	t.Parallel()
	const atCap = "HTTP 503 (server at -max-conns)"
	echoTarget := startTarget(t, "echo-gorilla", "-max-conns", "2")
	says(t, report(t, "echo", "-url", echoTarget.ws, "-admin", echoTarget.admin, "-c", "4", "-duration", "200ms", "-warmup", "0s"),
		[]string{atCap}, "bad handshake")
	says(t, report(t, "conns", "-url", echoTarget.ws, "-admin", echoTarget.admin, "-n", "4", "-hold", "100ms"),
		[]string{atCap}, "bad handshake")
	bcast := startTarget(t, "broadcast-gorilla", "-max-conns", "2")
	// With the sender refused too, nothing is delivered: the run fails.
	says(t, reportExit(t, []int{0, 1}, "broadcast", "-url", bcast.ws, "-admin", bcast.admin, "-subscribers", "4", "-senders", "1", "-rate", "10", "-duration", "200ms"),
		[]string{atCap}, "bad handshake")
	sio := startTarget(t, "empty", "-max-conns", "2")
	for _, transport := range []string{"websocket", "polling"} {
		says(t, report(t, "handshake", "-url", sio.url, "-admin", sio.admin, "-n", "4", "-transport", transport),
			[]string{atCap}, "bad handshake")
	}
}

// TestReportEchoTotals: the echo table counts the window, and the
// verdicts' counts, which take in the warmup and the last echoes, say
// that they are the whole run's.
func TestReportEchoTotals(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "echo-gorilla")
	text := report(t, "echo", "-url", tg.ws, "-admin", tg.admin, "-c", "2", "-duration", "300ms", "-warmup", "200ms")
	says(t, text, []string{
		"the table counts the 300ms window only; the verdicts count the whole run (warmup, window and the last echoes)\n",
		"\nmessages echoed ",
		"client and server agree on the messages: the client sent ",
		"(counts of the whole run, through the last close)\n",
	}, "\nmessages  ")
}

// TestReportBroadcastPushes: against a target that also pushes, loadgen
// broadcast counts the pushes apart from the broadcast deliveries, and
// says what the server's "messages sent" adds up.
func TestReportBroadcastPushes(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "broadcast-gorilla", "-push-interval", "20ms")
	args := []string{"broadcast", "-url", tg.ws, "-admin", tg.admin, "-subscribers", "3", "-senders", "1", "-rate", "20", "-duration", "300ms"}
	text := report(t, args...)
	says(t, text, []string{
		"\ndeliveries received ", "\npushes received ", "(the target's -push-interval; not deliveries)",
		"\nmessages received in all ", "(deliveries, duplicates, broadcastResults and pushes)", "messages sent",
		"3 subscribers", "1 sender,", "broadcastResults, 0 with a listenerCount other than 4",
	}, "1 senders", "map[")
	var stdout, stderr strings.Builder
	if code := run(context.Background(), append(args, "-json", "-"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r struct {
		Received       uint64 `json:"received"`
		PushesReceived uint64 `json:"pushes_received"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
		t.Fatal(err)
	}
	if r.PushesReceived == 0 || r.Received == 0 {
		t.Errorf("pushes_received %d, received %d: want both counted", r.PushesReceived, r.Received)
	}
}

// TestReportSentences: no report prints a Go map ("map[reason:2]"), and
// a count of one reads in the singular.
func TestReportSentences(t *testing.T) {
	t.Parallel()
	sio := startTarget(t, "empty")
	says(t, report(t, "handshake", "-url", sio.url, "-admin", sio.admin, "-n", "1", "-transport", "websocket"),
		[]string{"handshake: 1 connection at once", "\ndisconnects ", "transport close 1"}, "map[", "1 connections")
	tg := startTarget(t, "echo-gorilla")
	says(t, report(t, "echo", "-url", tg.ws, "-admin", tg.admin, "-c", "1", "-duration", "100ms", "-warmup", "0s"),
		[]string{"echo: 1 connection to "}, "map[", "1 connections")
	says(t, report(t, "conns", "-url", tg.ws, "-admin", tg.admin, "-n", "1", "-hold", "50ms"),
		[]string{"conns: 1 idle connection to ", "\nbatches             1 ("}, "map[", "1 idle connections")
}

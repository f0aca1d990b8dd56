package main

import (
	"context"
	"strings"
	"testing"
)

func TestRunFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"handshake", "-n", "0"}, 2, "loadgen handshake: invalid value \"0\" for flag -n"},
		{[]string{"handshake", "-transport", "ws"}, 2, "flag -transport"},
		{[]string{"handshake", "-h"}, 0, ""},
		{[]string{"echo", "-mode", "async"}, 2, "loadgen echo: invalid value \"async\" for flag -mode: want sync, pipelined, rate"},
		{[]string{"echo", "-url", "http://127.0.0.1:8080"}, 2, "loadgen echo: invalid value \"http://127.0.0.1:8080\" for flag -url"},
		{[]string{"echo", "-h"}, 0, ""},
		{[]string{"conns", "-sources", "127.0.0.2-127.0.0.1"}, 2, "loadgen conns: invalid value \"127.0.0.2-127.0.0.1\" for flag -sources"},
		{[]string{"conns", "-n", "10000000", "-url", "ws://127.0.0.1:1/"}, 1, "loadgen conns: -n 10000000 is more than the open-files limit allows"},
		{[]string{"conns", "-h"}, 0, ""},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tc.args, &stdout, &stderr)
		lastLine := stderr.String()
		if i := strings.LastIndex(strings.TrimSuffix(lastLine, "\n"), "\n"); i >= 0 && tc.code == 1 {
			lastLine = lastLine[i+1:] // conns says the open-files budget first
		}
		if code != tc.code || !strings.Contains(lastLine, tc.stderr) || strings.Count(lastLine, "\n") > 1 {
			t.Errorf("run(%q) = %d, stderr %q; want %d and one line with %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
		}
	}
	for scenario, flagName := range map[string]string{"handshake": "-deadline", "echo": "-inflight", "conns": "-sources"} {
		var stdout strings.Builder
		run(context.Background(), []string{scenario, "-h"}, &stdout, new(strings.Builder))
		if !strings.Contains(stdout.String(), "usage: loadgen "+scenario) || !strings.Contains(stdout.String(), flagName) {
			t.Errorf("%s -h: %q", scenario, stdout.String())
		}
	}
}

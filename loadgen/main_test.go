package main

import (
	"context"
	"strings"
	"testing"
)

func TestRunFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 2, "usage: loadgen handshake"},
		{[]string{"soak"}, 2, "usage: loadgen handshake"},
		{[]string{"handshake", "-n", "0"}, 2, "loadgen handshake: invalid value \"0\" for flag -n"},
		{[]string{"handshake", "-transport", "ws"}, 2, "flag -transport"},
		{[]string{"handshake", "-h"}, 0, ""},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) || strings.Count(stderr.String(), "\n") > 1 {
			t.Errorf("run(%q) = %d, stderr %q; want %d and one line with %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
		}
	}
	var stdout strings.Builder
	run(context.Background(), []string{"handshake", "-h"}, &stdout, new(strings.Builder))
	if !strings.Contains(stdout.String(), "-deadline") {
		t.Errorf("-h: %q", stdout.String())
	}
}

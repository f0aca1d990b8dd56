package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/loadgen/handshake"
	"github.com/knowngood/knowngood/loadgen/merge"
)

// TestShardFlags: -shard and a list of admin URLs on every scenario, and
// merge's own flags: a bad value is one line naming the flag, exit 2.
func TestShardFlags(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"handshake", "echo", "conns", "broadcast"} {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"-shard", "4/3"}, `loadgen ` + s + `: invalid value "4/3" for flag -shard: want I/N, 1 <= I <= N (e.g. 2/3)`},
			{[]string{"-shard", "two"}, `invalid value "two" for flag -shard`},
			{[]string{"-admin", "http://127.0.0.1:1,ftp://b:2"}, `invalid value "http://127.0.0.1:1,ftp://b:2" for flag -admin: want http://HOST:PORT, several separated by commas`},
		} {
			var stdout, stderr strings.Builder
			code := run(context.Background(), append([]string{s}, c.args...), &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("%s %q: exit %d, %q; want 2 and one line with %q", s, c.args, code, stderr.String(), c.want)
			}
		}
		var stdout strings.Builder
		run(context.Background(), []string{s, "-h"}, &stdout, new(strings.Builder))
		if !strings.Contains(stdout.String(), "-shard I/N") || !strings.Contains(stdout.String(), "shard I gets total/N, plus one when I <= total mod N") {
			t.Errorf("%s -h says nothing of -shard's split:\n%s", s, stdout.String())
		}
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"merge"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "loadgen merge: no reports") {
		t.Errorf("merge without reports: exit %d, %q", code, stderr.String())
	}
	if code := run(context.Background(), []string{"echo", "-c", "2", "-shard", "3/3"}, &stdout, &stderr); code != 2 {
		t.Errorf("a shard with no connections: exit %d", code)
	}
	if cfg, err := handshake.ParseFlags([]string{"-n", "10", "-shard", "1/3"}); err != nil || cfg.N != 4 {
		t.Errorf("-n 10 -shard 1/3: %d, %v; want 4", cfg.N, err)
	}
}

// TestClusterHandshakeShards: two shards of a handshake run, each on its
// own Socket.IO replica, merge into one run that the sum over both
// replicas agrees with.
func TestClusterHandshakeShards(t *testing.T) {
	t.Parallel()
	a, b := startTarget(t, "empty"), startTarget(t, "empty")
	admins := a.admin + "," + b.admin
	dir := t.TempDir()
	var files []string
	for i, tg := range []target{a, b} {
		f := filepath.Join(dir, tg.addr+".json")
		var stdout, stderr strings.Builder
		args := []string{"handshake", "-url", tg.url, "-admin", admins, "-n", "15", "-shard", []string{"1/2", "2/2"}[i], "-transport", "websocket", "-json", f}
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("loadgen %q: exit %d\n%s", args, code, stderr.String())
		}
		files = append(files, f)
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"merge", files[0], files[1]}, &stdout, &stderr); code != 0 {
		t.Fatalf("merge: exit %d\n%s", code, stderr.String())
	}
	t.Logf("merged:\n%s", stdout.String())
	if !strings.Contains(stdout.String(), "verdict: client and server agree: 15 of 15 handshakes completed") {
		t.Errorf("merged report has no agreement on 15 handshakes:\n%s", stdout.String())
	}
}

// TestMergeFromLogs: shards run as a Kubernetes Indexed Job's pods run
// them (docker/k8s/load: -shard K+1/N with a 0-based K, -admin dns+, the
// report on stdout and the table on stderr, both in one log) merge from
// that log on standard input into the run one process would have made.
func TestMergeFromLogs(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, "empty")
	var logs bytes.Buffer // stdout and stderr together, as kubectl logs gives them
	for k := range 2 {
		args := []string{"conns", "-url", "ws://" + tg.addr + "/socket.io/", "-n", "9", "-hold", "100ms",
			"-shard", fmt.Sprintf("%d+1/2", k), "-admin", "dns+" + tg.admin, "-json", "-"}
		if code := run(context.Background(), args, &logs, &logs); code != 0 {
			t.Fatalf("loadgen %q: exit %d\n%s", args, code, logs.String())
		}
	}
	rep, err := merge.Run(context.Background(), merge.Config{Reports: []string{"-"}, Stdin: &logs}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("merged:\n%s", table.String())
	c, ok := rep.(*conns.Report)
	if !ok || c.Held != 9 || c.Server == nil || c.Server.Admin == "" {
		t.Errorf("merged %T %+v; want 9 held and the server's view", rep, rep)
	}
	// The connect times merge from the shards' histograms: all 9.
	var timed int64
	if ok {
		for _, b := range c.ConnectHistogram {
			timed += b.Count
		}
	}
	if !ok || timed != 9 || c.Connect == nil || c.Connect.P99 < c.Connect.P50 || c.ConnectsPerSecond <= 0 {
		t.Errorf("merged connect times: %d timed, %+v, %v/s; want 9 and their percentiles", timed, c.Connect, c.ConnectsPerSecond)
	}

	_, err = merge.Run(context.Background(), merge.Config{Reports: []string{"-"}, Stdin: strings.NewReader("a table\nand no report\n")}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "standard input has no report") {
		t.Errorf("merge of a log without reports: %v", err)
	}
}

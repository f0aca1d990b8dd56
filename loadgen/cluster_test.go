package main

// A target of several replicas, each with its own admin listener: the
// server's view is the sum over them, a loss is placed on the replica that
// counted it, and shards of one run, from separate loadgen processes,
// merge into one report that reconciles exactly with the sum.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/echo"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/scripts/harness"
)

// cluster is where the clients go (one URL per shard) and the admin
// listeners of every replica, comma-separated. KG_CLUSTER_URLS (ws://
// URLs, comma-separated, e.g. an nginx in front of the replicas, given
// once per shard) and KG_CLUSTER_ADMINS point the tests at a cluster that
// is already running; without them three echo-gorilla replicas are
// started, and shard i goes to replica i.
func cluster(t *testing.T, shards int) (urls []string, admins string) {
	t.Helper()
	if u, a := os.Getenv("KG_CLUSTER_URLS"), os.Getenv("KG_CLUSTER_ADMINS"); u != "" && a != "" {
		urls = strings.Split(u, ",")
		for len(urls) < shards {
			urls = append(urls, urls[len(urls)-1])
		}
		return urls, a
	}
	var list []string
	for range 3 {
		tg := startTarget(t, "echo-gorilla")
		urls, list = append(urls, tg.ws), append(list, tg.admin)
	}
	return urls, strings.Join(list, ",")
}

// echoReport runs loadgen in this process with -json - and decodes the
// report; the run must pass (exit 0).
func echoReport(t *testing.T, args ...string) *echo.Report {
	t.Helper()
	return echoReportExit(t, 0, args...)
}

// echoReportExit is echoReport for a run that exits with code.
func echoReportExit(t *testing.T, code int, args ...string) *echo.Report {
	t.Helper()
	var stdout, stderr strings.Builder
	args = append([]string{args[0], "-json", "-"}, args[1:]...) // flags before merge's files
	if got := run(context.Background(), args, &stdout, &stderr); got != code {
		t.Fatalf("loadgen %q: exit %d, want %d\n%s", args, got, code, stderr.String())
	}
	t.Logf("loadgen %q:\n%s", args, stderr.String())
	var r echo.Report
	if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
		t.Fatalf("loadgen %q printed %q: %v", args, stdout.String(), err)
	}
	return &r
}

// agreedExactly checks the verdict that the client's messages and the
// server's sum are the same counts, both ways.
func agreedExactly(t *testing.T, vs []verdict.Verdict) {
	t.Helper()
	re := regexp.MustCompile(`the client sent (\d+), the server received (\d+); the server sent (\d+), the client counted (\d+)`)
	for _, v := range vs {
		if m := re.FindStringSubmatch(v.Text); v.Kind == verdict.Agree && m != nil {
			if m[1] != m[2] || m[3] != m[4] || m[1] == "0" {
				t.Errorf("not exact: %s", v.Text)
			}
			return
		}
	}
	t.Errorf("no agreement on the messages in %+v", vs)
}

// TestClusterSum: a client on one replica, -admin listing all three: the
// server's view is the sum, each replica's part beside it.
func TestClusterSum(t *testing.T) {
	t.Parallel()
	urls, admins := cluster(t, 1)
	r := echoReport(t, "echo", "-url", urls[0], "-admin", admins, "-c", "4", "-mode", "pipelined", "-duration", "300ms", "-warmup", "100ms")
	agreedExactly(t, r.Verdicts)
	s := r.Server
	if n := strings.Count(admins, ",") + 1; s == nil || len(s.Replicas) != n {
		t.Fatalf("server view %+v, want %d replicas", s, n)
	}
	var sum uint64
	for _, p := range s.Replicas {
		if p.Diff == nil || p.Before == nil || p.After == nil {
			t.Fatalf("replica %s without figures: %+v", p.Admin, p)
		}
		sum += p.Diff.MessagesReceived
	}
	if sum != *s.MessagesReceived || sum == 0 {
		t.Errorf("replicas received %d in all, the server view says %d", sum, *s.MessagesReceived)
	}
}

// TestClusterShardsMerge: two loadgen processes, each a shard of one run
// (each on its own replica, or both on the cluster's URL), then merge:
// the merged client counts reconcile exactly with the sum over the
// replicas.
func TestClusterShardsMerge(t *testing.T) {
	t.Parallel()
	urls, admins := cluster(t, 2)
	shardsMerge(t, urls, admins)
}

// TestClusterBehindNginx: the same two shards, both through nginx in
// front of three replicas, as a cluster is deployed.
func TestClusterBehindNginx(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: nginx is one of the tools make test-quick does without (make test runs this)")
	}
	nginx := "/usr/sbin/nginx" // Debian's, outside a user's PATH
	if p, err := exec.LookPath("nginx"); err == nil {
		nginx = p
	}
	need(t, "nginx (apt-get install nginx)", nginx)
	var upstreams, admins []string
	for range 3 {
		tg := startTarget(t, "echo-gorilla")
		upstreams, admins = append(upstreams, "server "+tg.addr+";"), append(admins, tg.admin)
	}
	addr := startNginx(t, nginx, strings.Join(upstreams, " "))
	url := "ws://" + addr + "/"
	shardsMerge(t, []string{url, url}, strings.Join(admins, ","))
}

// startNginx runs nginx on a free loopback port in front of upstreams
// (nginx server lines), proxying WebSocket upgrades; it stops when the
// test ends.
func startNginx(t *testing.T, nginx, upstreams string) (addr string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = l.Addr().String()
	l.Close() // nginx cannot listen on port 0 and say which it got
	dir := t.TempDir()
	conf := fmt.Sprintf(`worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s; proxy_temp_path %[1]s; fastcgi_temp_path %[1]s; uwsgi_temp_path %[1]s; scgi_temp_path %[1]s;
  upstream replicas { %[2]s }
  server {
    listen %[3]s;
    location / {
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection "upgrade";
    }
  }
}
`, dir, upstreams, addr)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-c", path, "-p", dir, "-g", "daemon off;")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// SIGTERM is nginx's fast shutdown.
	exited := harness.StopAtCleanup(t, cmd, syscall.SIGTERM, 10*time.Second)
	for range 100 { // up to 10 s
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return addr
		}
		select {
		case <-exited:
			t.Fatalf("nginx exited: %s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("nginx does not listen on %s: %s", addr, out.String())
	return ""
}

// shardsMerge runs two loadgen processes, shards 1/2 and 2/2 of one run
// with their clients on urls[0] and urls[1], merges their reports and
// checks the merged view.
func shardsMerge(t *testing.T, urls []string, admins string) {
	t.Helper()
	bin := harness.LoadgenT(t)
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "1.json"), filepath.Join(dir, "2.json")}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			out, err := exec.Command(bin, "echo", "-url", urls[i], "-admin", admins, "-shard", fmt.Sprintf("%d/2", i+1),
				"-c", "7", "-mode", "pipelined", "-duration", "400ms", "-warmup", "100ms", "-json", files[i]).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("shard %d: %v\n%s", i+1, err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r := echoReport(t, "merge", files[1], files[0])
	agreedExactly(t, r.Verdicts)
	if r.Conns != 7 || r.Connected != 7 {
		t.Errorf("merged %d of %d connections, want 7 of 7 (4 + 3)", r.Connected, r.Conns)
	}
	if r.P50ms == nil || r.Messages == 0 {
		t.Errorf("merged latency %v of %d messages", r.P50ms, r.Messages)
	}
	if r.Server == nil || len(r.Server.Replicas) != strings.Count(admins, ",")+1 {
		t.Fatalf("merged server view %+v", r.Server)
	}

	// Refusals: a shard twice, a shard missing, a report not sharded.
	single := filepath.Join(dir, "single.json")
	if err := exec.Command(bin, "echo", "-url", urls[0], "-admin", admins, "-c", "1", "-duration", "100ms", "-warmup", "0s", "-json", single).Run(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{files[0], files[0]}, "shard 1/2 is given twice"},
		{[]string{files[1]}, "shard 1/2 missing"},
		{[]string{files[0], single}, "single.json is not a sharded report"},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), append([]string{"merge"}, c.files...), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("merge %q: exit %d, %q; want 1 and one line with %q", c.files, code, stderr.String(), c.want)
		}
	}
}

// TestClusterFaultOnOneReplica: the replica started with -fault-drop is
// the one the verdict names; a replica whose admin listener does not
// answer makes the view partial, and the verdict names it.
func TestClusterFaultOnOneReplica(t *testing.T) {
	t.Parallel()
	a, b := startTarget(t, "echo-gorilla"), startTarget(t, "echo-gorilla", "-fault-drop", "0.2")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String()
	l.Close()

	// The messages dropped on purpose are a loss: the run fails.
	r := echoReportExit(t, 1, "echo", "-url", b.ws, "-admin", a.admin+","+b.admin, "-c", "2", "-mode", "pipelined", "-inflight", "4",
		"-duration", "300ms", "-warmup", "0s", "-timeout", "1s")
	has(t, r.Verdicts, verdict.Faults, fmt.Sprintf("on replica %s)", b.admin))
	for _, v := range r.Verdicts {
		if v.Kind == verdict.Faults && strings.Contains(v.Text, a.admin) {
			t.Errorf("the fault verdict names the clean replica: %s", v.Text)
		}
	}

	r = echoReport(t, "echo", "-url", a.ws, "-admin", a.admin+","+gone, "-c", "2", "-duration", "200ms", "-warmup", "0s")
	has(t, r.Verdicts, verdict.PartialView, "the server's view is partial: no /stats from replica "+gone)
	if r.Server == nil || len(r.Server.Replicas) != 2 || r.Server.Replicas[1].Error == "" || r.Server.Replicas[0].Diff == nil {
		t.Errorf("server view %+v: want the answering replica's figures, and the other's error", r.Server)
	}
}

// TestClusterWatch: loadgen watch with two replicas' admin listeners sums
// them, so a client on one of them is reconciled against the sum.
func TestClusterWatch(t *testing.T) {
	t.Parallel()
	a, b := startTarget(t, "echo-gorilla"), startTarget(t, "echo-gorilla")
	counts := filepath.Join(t.TempDir(), "counts.json")
	vs := loadgenExit(t, []int{1}, append([]string{"watch", "-admin", a.admin + "," + b.admin, "-client-json", counts, "--"}, dropper(b.ws, counts)...)...)
	has(t, vs, verdict.RepliesLost, "the server sent 100 messages and the client counted 50: the other 50 were lost on the client side")
	has(t, vs, verdict.Agree, "client and server agree: 1 of 1 handshakes completed")
}

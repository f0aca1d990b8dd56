package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/prereq"
	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/protocol"
)

// cluster is one run of scripts/cluster.sh up, in a directory of the test's.
type cluster struct {
	dir      string
	port     int // nginx's
	replicas []replica
	env      []string
}

type replica struct {
	pid         int
	addr, admin string
}

// URL is the front's http://127.0.0.1:PORT.
func (c *cluster) URL() string { return "http://127.0.0.1:" + strconv.Itoa(c.port) }

// need skips a test whose tools are missing, with the command that installs
// them.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		_, err := exec.LookPath(tool)
		if err != nil && tool == "nginx" {
			_, err = os.Stat("/usr/sbin/nginx")
		}
		prereq.Need(t, tool+" (apt-get install -y nginx redis-server nodejs; make deps)", err)
	}
}

// up runs scripts/cluster.sh up with REPLICAS=n of variant behind nginx's
// lb policy, on free ports, and runs down when the test ends; down must
// leave none of the processes up started.
func up(t *testing.T, variant, lb string, n int, args ...string) *cluster {
	t.Helper()
	need(t, "nginx", "redis-server", "curl")
	c := &cluster{dir: t.TempDir(), port: freePort(t)}
	c.env = append(os.Environ(), "VARIANT="+variant, "LB="+lb, "REPLICAS="+strconv.Itoa(n),
		"PORT="+strconv.Itoa(c.port), "REPLICA_PORT=0", "ADMIN_PORT=0", "RUN_DIR="+c.dir,
		"KNOWNGOOD="+harness.KnowngoodT(t), "ARGS="+strings.Join(args, " "))
	t.Cleanup(func() { c.down(t) })
	if out, err := c.script("up"); err != nil {
		t.Fatalf("cluster.sh up: %v\n%s\n%s", err, out, c.logs())
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "replicas"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		var i int
		var r replica
		if _, err := fmt.Sscan(line, &i, &r.pid, &r.addr, &r.admin); err != nil {
			t.Fatalf("replicas file %q: %v", line, err)
		}
		c.replicas = append(c.replicas, r)
	}
	if len(c.replicas) != n {
		t.Fatalf("%d replicas listed, want %d", len(c.replicas), n)
	}
	return c
}

// script runs scripts/cluster.sh with the cluster's settings, for a minute
// at most.
func (c *cluster) script(verb string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../cluster.sh", verb)
	cmd.Env = c.env
	return cmd.CombinedOutput()
}

// pids are the processes the cluster started, from its pid files.
func (c *cluster) pids() []int {
	files, _ := filepath.Glob(filepath.Join(c.dir, "*.pid"))
	return procfs.PIDFiles(append(files, filepath.Join(c.dir, "nginx-workers"))...)
}

// down stops the cluster and checks that none of its processes is left.
func (c *cluster) down(t *testing.T) {
	pids := c.pids()
	if out, err := c.script("down"); err != nil {
		t.Errorf("cluster.sh down: %v\n%s", err, out)
	}
	for _, pid := range append(pids, c.running()...) {
		if alive(pid) {
			t.Errorf("pid %d is still running after cluster.sh down", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// running are the live processes whose command line names the run
// directory: redis-server (its socket), the replicas (-redis), nginx (-p),
// whether or not a pid file still lists them.
func (c *cluster) running() []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(c.dir)) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// logs is the tail of every log of the run, for a failure's message.
func (c *cluster) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), strings.Join(lines[max(0, len(lines)-5):], "\n"))
	}
	return b.String()
}

// stats reads every replica's /stats.
func (c *cluster) stats(t *testing.T) []protocol.Stats {
	t.Helper()
	out := make([]protocol.Stats, len(c.replicas))
	for i, r := range c.replicas {
		s, err := harness.ReadStats(nil, "http://"+r.admin)
		if err != nil {
			t.Fatalf("replica %d: %v", i+1, err)
		}
		out[i] = s
	}
	return out
}

// alive reports whether pid runs (a zombie, left for a reaper, does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	state := strings.Fields(string(b[i+1:]))
	return len(state) > 0 && state[0] != "Z" && state[0] != "X"
}

// freePort is a port for nginx: see clustertest.FreePort for why not one
// that a bind to port 0 gives.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := clustertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestClusterScript: up starts every replica healthy on its admin port,
// status says so, nginx answers on the front, and down leaves no process
// (checked by up's cleanup); status after down fails.
func TestClusterScript(t *testing.T) {
	t.Parallel()
	c := up(t, "broadcast-gnet", "least_conn", 3)
	pids := c.pids()
	if len(pids) < 5 { // redis, 3 replicas, the nginx master (and its workers)
		t.Errorf("pids %v: want redis-server, 3 replicas and nginx", pids)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i, r := range c.replicas {
		resp, err := client.Get("http://" + r.admin + "/health")
		if err != nil {
			t.Fatalf("replica %d /health: %v", i+1, err)
		}
		var h struct {
			Status  string `json:"status"`
			Variant string `json:"variant"`
		}
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || h.Variant != "broadcast-gnet" {
			t.Errorf("replica %d /health: %d %+v %v", i+1, resp.StatusCode, h, err)
		}
	}
	// A plain GET through nginx reaches a replica, which answers it as a
	// WebSocket target answers a request that is no upgrade.
	resp, err := client.Get(c.URL() + "/")
	if err != nil {
		t.Fatalf("nginx: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusBadGateway || resp.Header.Get("Server") == "" {
		t.Errorf("nginx answered %s (Server %q)", resp.Status, resp.Header.Get("Server"))
	}
	if out, err := c.script("status"); err != nil || strings.Count(string(out), " ok ") != 5 {
		t.Errorf("status: %v\n%s", err, out)
	}
	if out, err := c.script("up"); err == nil || !strings.Contains(string(out), "already up") {
		t.Errorf("a second up: %v\n%s", err, out)
	}
	c.down(t)
	if out, err := c.script("status"); err == nil {
		t.Errorf("status after down succeeded:\n%s", out)
	}
}

// TestClusterScriptFailsClean: an up that fails half-way (the replicas
// refuse a flag, after redis-server has started) says why and leaves no
// process; an unknown LB is refused before anything starts.
func TestClusterScriptFailsClean(t *testing.T) {
	t.Parallel()
	need(t, "nginx", "redis-server", "curl")
	for _, tc := range []struct{ name, lb, args, want string }{
		{"bad flag", "least_conn", "-no-such-flag", "replica exited before listening"},
		{"bad LB", "sticky_please", "", "LB=sticky_please"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &cluster{dir: t.TempDir(), port: freePort(t)}
			c.env = append(os.Environ(), "VARIANT=broadcast-gnet", "LB="+tc.lb, "REPLICAS=2",
				"PORT="+strconv.Itoa(c.port), "REPLICA_PORT=0", "ADMIN_PORT=0", "RUN_DIR="+c.dir,
				"KNOWNGOOD="+harness.KnowngoodT(t), "ARGS="+tc.args)
			out, err := c.script("up")
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("up: %v, want a failure saying %q:\n%s", err, tc.want, out)
			}
			// up's own cleanup ran down: no process of the run is left.
			for _, pid := range c.running() {
				t.Errorf("pid %d left running after a failed up", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/protocol"
)

// leakPeriod is the replicas' -fault-leak-timers with -fault leak-timers.
const leakPeriod = "1s"

// cluster is what the experiment started: Redis, the replicas, nginx.
type cluster struct {
	dir, ownDir string // ownDir: a temporary dir to remove, "" for -run-dir
	redis       []*harness.Process
	redisURLs   []string
	replicas    []*replica
	ports       []int // nginx's
	nginxPIDs   []int // master, then workers
	nginxUp     bool

	mu          sync.Mutex
	killed      *replica        // -kill-replica's, once killed
	killedStats *protocol.Stats // its /stats read just before
}

// replica is one knowngood process.
type replica struct {
	name   string // replica1, ...
	p      *harness.Process
	limit  int // its open-files limit
	faulty bool
}

// startCluster starts Redis (-redis-shards servers), the replicas and
// nginx in front of them. What it returns is to be stopped, on an error
// too.
func startCluster(ctx context.Context, o options, sz sizing, bins *benchrun.Binaries, stderr io.Writer) (*cluster, error) {
	c := &cluster{dir: o.runDir}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "experiment-cluster")
		if err != nil {
			return nil, err
		}
		c.dir, c.ownDir = d, d
	} else if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	for range o.redisShards {
		p, url, err := harness.StartRedis(ctx)
		if err != nil {
			return c, err
		}
		c.redis, c.redisURLs = append(c.redis, p), append(c.redisURLs, url)
		c.record("redis", p.PID())
	}
	fmt.Fprintf(stderr, "Redis: %s\n", strings.Join(c.redisURLs, ", "))
	for i := range sz.replicas {
		r, err := startReplica(ctx, o, sz, c.redisURLs, i, stderr)
		if err != nil {
			return c, err
		}
		c.replicas = append(c.replicas, r)
		c.record(r.name, r.p.PID())
	}
	return c, c.startNginx(ctx, o, sz, bins, stderr)
}

// startReplica starts replica i; with -fault emfile the last one runs
// under prlimit with an open-files limit of three fifths of its share of
// the connections, so that it runs out past the middle of the ramp.
func startReplica(ctx context.Context, o options, sz sizing, redis []string, i int, stderr io.Writer) (*replica, error) {
	r := &replica{name: "replica" + strconv.Itoa(i+1), limit: sz.limit}
	args := []string{"-variant", benchrun.SioBaseline, "-redis", strings.Join(redis, ","), "-transports", "websocket"}
	if o.engine != "" {
		args = append(args, "-engine", o.engine)
	}
	if o.pingInterval > 0 {
		args = append(args, "-ping-interval", o.pingInterval.String())
	}
	if o.fault == faultLeakTimers {
		args = append(args, "-fault-leak-timers", leakPeriod)
		r.faulty = true
	}
	var wrapper []string
	if o.fault == faultEMFILE && i == sz.replicas-1 {
		r.limit = max(64, o.conns/sz.replicas*3/5)
		wrapper = []string{"prlimit", "--nofile=" + strconv.Itoa(r.limit)}
		r.faulty = true
	}
	p, err := benchrun.Start(ctx, stderr, wrapper, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	r.p = p
	return r, nil
}

// startNginx runs scripts/cluster.sh front: least_conn over the replicas,
// one port per loadgen shard (each shard's connections come from
// 127.0.0.1, and one port takes at most the ephemeral range's worth from
// one address), workers sized by size.
func (c *cluster) startNginx(ctx context.Context, o options, sz sizing, bins *benchrun.Binaries, stderr io.Writer) error {
	var ups, ports []string
	for _, r := range c.replicas {
		ups = append(ups, r.p.Addr)
	}
	for range sz.shards {
		port, held, err := holdPort()
		if err != nil {
			return err
		}
		defer held.Close() // nginx listens there once front returns
		c.ports = append(c.ports, port)
		ports = append(ports, strconv.Itoa(port))
	}
	cmd := exec.CommandContext(ctx, "scripts/cluster.sh", "front")
	cmd.Env = append(os.Environ(), "RUN_DIR="+c.dir, "LB=least_conn", "UPSTREAMS="+strings.Join(ups, " "),
		"PORTS="+strings.Join(ports, " "), "NGINX_WORKERS="+strconv.Itoa(sz.nginxWorkers),
		"NGINX_NOFILE="+strconv.Itoa(sz.limit), "NGINX_CONNECTIONS="+strconv.Itoa(sz.nginxConns), "KNOWNGOOD="+bins.Server)
	if o.fault == faultEMFILE {
		// nginx would pass each refusal on to the next replica, and the
		// clients would never see one; the original run's did.
		cmd.Env = append(cmd.Env, "NGINX_NEXT_UPSTREAM=off")
	}
	if sz.sources > 0 {
		// The replicas are dialled from each client's own address too.
		cmd.Env = append(cmd.Env, "NGINX_PROXY_BIND=$remote_addr")
	}
	out, err := cmd.CombinedOutput()
	c.nginxUp = true // down is safe whatever front did
	if err != nil {
		return fmt.Errorf("scripts/cluster.sh front: %v: %s", err, benchrun.LastLine(string(out)))
	}
	fmt.Fprint(stderr, string(out))
	c.nginxPIDs = procfs.PIDFiles(filepath.Join(c.dir, "nginx.pid"), filepath.Join(c.dir, "nginx-workers"))
	for _, pid := range c.nginxPIDs {
		c.record("nginx", pid)
	}
	return nil
}

// record adds a process the run started to the run directory's "pids"
// file ("NAME PID" a line): what a user (or a test) checks is gone.
func (c *cluster) record(name string, pid int) {
	f, err := os.OpenFile(filepath.Join(c.dir, "pids"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %d\n", name, pid)
	f.Close()
}

// kill kills the first replica with SIGKILL, as a crash would, its
// /stats read just before, for the run's reconciliation.
func (c *cluster) kill(stderr io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.replicas[0]
	if st, err := r.p.ReadStats(); err == nil {
		c.killedStats = &st
	}
	if err := r.p.Signal(os.Kill); err != nil {
		fmt.Fprintf(stderr, "kill %s: %v\n", r.name, err)
		return
	}
	c.killed = r
	fmt.Fprintf(stderr, "killed %s (pid %d)\n", r.name, r.p.PID())
}

// stall stops the last replica for d (or until ctx ends) and lets it go
// on: every descriptor and timer it holds waits, as in a loop that
// blocks. It returns the replica, nil when it could not be stopped.
func (c *cluster) stall(ctx context.Context, d time.Duration, stderr io.Writer) *replica {
	r := c.replicas[len(c.replicas)-1]
	if err := r.p.Signal(stopSignal); err != nil {
		fmt.Fprintf(stderr, "stop %s: %v\n", r.name, err)
		return nil
	}
	fmt.Fprintf(stderr, "stopped %s (pid %d) for %s\n", r.name, r.p.PID(), d)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	if err := r.p.Signal(contSignal); err != nil {
		fmt.Fprintf(stderr, "continue %s: %v\n", r.name, err)
	}
	return r
}

func (c *cluster) wasKilled(r *replica) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killed == r
}

// stop stops nginx first (no client is sent to a replica that is going),
// then the replicas and Redis, and removes the temporary directory.
func (c *cluster) stop(stderr io.Writer) {
	if c.nginxUp {
		cmd := exec.Command("scripts/cluster.sh", "down")
		cmd.Env = append(os.Environ(), "RUN_DIR="+c.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "scripts/cluster.sh down: %v: %s\n", err, out)
		}
	}
	var wg sync.WaitGroup
	for _, r := range c.replicas {
		wg.Go(func() {
			if err := r.p.Stop(); err != nil && !c.wasKilled(r) {
				fmt.Fprintf(stderr, "%s: %v\n", r.name, err)
			}
		})
	}
	wg.Wait()
	for _, p := range c.redis {
		_ = p.Stop()
	}
	if c.ownDir != "" {
		os.RemoveAll(c.ownDir)
	}
}

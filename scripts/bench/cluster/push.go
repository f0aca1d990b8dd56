package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/loadgen/broadcast"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

// pushSetup runs the push part on n replicas (n = 1: one process, no
// Redis).
func pushSetup(ctx context.Context, stderr io.Writer, o options, bins *benchrun.Binaries, variant string, n int) *row {
	r := &row{part: "push " + variant, clients: o.subscribers, p50: -1, p99: -1, redisCPU: -1}
	if n == 1 {
		r.setup = "1 process"
	} else {
		r.setup = fmt.Sprintf("%d replicas x %d, Redis", n, o.subscribers/n)
	}
	fmt.Fprintf(stderr, "push, %s, %s\n", variant, r.setup)
	var procs benchrun.Procs
	defer procs.Stop()
	replicas, redis, err := startPushReplicas(ctx, stderr, &procs, variant, n)
	if err != nil {
		r.err = err
		return r
	}
	// The loadgen window outlasts the measured one by the connect skew of
	// the shards and the settling time: the measured window starts once
	// every subscriber is connected, so inside every shard's window.
	dir, err := os.MkdirTemp("", "bench-cluster")
	if err != nil {
		r.err = err
		return r
	}
	defer os.RemoveAll(dir)
	lctx, cancel := context.WithTimeout(ctx, o.duration+5*time.Minute)
	defer cancel()
	files, err := runShards(lctx, o, bins, replicas, dir, func(wctx context.Context) error {
		return pushWindow(wctx, o, replicas, redis, r)
	})
	if err != nil {
		r.err = err
		return r
	}
	rep, err := merge(lctx, bins.Loadgen, files)
	if err != nil {
		r.err = err
		return r
	}
	if rep.Latency != nil {
		r.p50, r.p99 = rep.Latency.P50*1000, rep.Latency.P99*1000
	}
	r.lost, r.clientCPU = rep.Lost, rep.ClientCPUSeconds
	if rep.Failed > 0 {
		r.err = fmt.Errorf("%d subscribers failed to connect", rep.Failed)
	}
	return r
}

// startPushReplicas starts n replicas of variant pushing (on a
// redis-server of their own when n > 1, else redis is nil), added to
// procs.
func startPushReplicas(ctx context.Context, stderr io.Writer, procs *benchrun.Procs, variant string, n int) (replicas []*harness.Process, redis *harness.Process, err error) {
	args := []string{"-variant", variant, "-push-interval", "100ms", "-push-size", "100"}
	if n > 1 {
		var url string
		if redis, url, err = harness.StartRedis(ctx); err != nil {
			return nil, nil, err
		}
		procs.Add(redis)
		args = append(args, "-redis", url)
	}
	for range n {
		p, err := benchrun.Start(ctx, stderr, nil, args...)
		if err != nil {
			return nil, nil, err
		}
		procs.Add(p)
		replicas = append(replicas, p)
	}
	return replicas, redis, nil
}

// runShards runs the loadgen shards against replicas (shard i on replica
// i mod n), each writing its report into dir, and window while they run;
// it returns the reports' paths. The window gives up as soon as every
// shard has exited: a shard that failed says why, rather than the wait
// for its subscribers timing out.
func runShards(ctx context.Context, o options, bins *benchrun.Binaries, replicas []*harness.Process, dir string, window func(context.Context) error) ([]string, error) {
	var admins []string
	for _, p := range replicas {
		admins = append(admins, p.AdminURL())
	}
	var wg sync.WaitGroup
	errs := make([]error, shards)
	files := make([]string, shards)
	for i := range shards {
		files[i] = filepath.Join(dir, fmt.Sprintf("shard%d.json", i+1))
		url := "ws://" + replicas[i%len(replicas)].Addr + "/"
		cmd := exec.CommandContext(ctx, bins.Loadgen, "broadcast", "-push", "-url", url, "-admin", strings.Join(admins, ","),
			"-subscribers", strconv.Itoa(o.subscribers), "-shard", fmt.Sprintf("%d/%d", i+1, shards), "-sources", o.sources,
			"-duration", (o.duration + 10*time.Second).String(), "-json", files[i])
		var errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &errOut
		wg.Go(func() {
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("loadgen shard %d/%d: %v: %s", i+1, shards, err, benchrun.LastLine(errOut.String()))
			}
		})
	}
	wctx, stopWindow := context.WithCancel(ctx)
	exited := make(chan struct{})
	go func() {
		wg.Wait()
		close(exited)
		stopWindow()
	}()
	werr := window(wctx)
	<-exited
	stopWindow()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return files, werr
}

// pushWindow waits until every subscriber is connected (the replicas'
// connections_active add up), lets the connects settle, then reads the
// replicas' /stats and Redis's CPU at both ends of o.duration.
func pushWindow(ctx context.Context, o options, replicas []*harness.Process, redis *harness.Process, r *row) error {
	sum := func() (cpu float64, sent uint64, active int64, err error) {
		for _, p := range replicas {
			st, err := p.ReadStats()
			if err != nil {
				return 0, 0, 0, fmt.Errorf("%s: /stats: %v", p.Name, err)
			}
			cpu += st.CPUSeconds
			sent += st.MessagesSent
			active += st.ConnectionsActive
		}
		return cpu, sent, active, nil
	}
	for {
		_, _, active, err := sum()
		if err != nil {
			return err
		}
		if active >= int64(o.subscribers) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d subscribers connected: %w", active, o.subscribers, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := benchrun.Sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	redisCPU := func() float64 {
		if redis == nil {
			return 0
		}
		s, _ := benchrun.ProcCPUSeconds(redis.PID())
		return s
	}
	cpu0, sent0, _, err := sum()
	if err != nil {
		return err
	}
	rc0, t0 := redisCPU(), time.Now()
	if err := benchrun.Sleep(ctx, o.duration); err != nil {
		return err
	}
	cpu1, sent1, active, err := sum()
	if err != nil {
		return err
	}
	rc1 := redisCPU()
	r.window = time.Since(t0).Seconds()
	if active < int64(o.subscribers) {
		return fmt.Errorf("only %d of %d subscribers still connected at the end of the window (loadgen's window ended first?)", active, o.subscribers)
	}
	r.serverCPU, r.deliveries = cpu1-cpu0, sent1-sent0
	if redis != nil {
		r.redisCPU = rc1 - rc0
	}
	return nil
}

// merge runs loadgen merge on the shards' reports.
func merge(ctx context.Context, loadgen string, files []string) (*broadcast.Report, error) {
	cmd := exec.CommandContext(ctx, loadgen, append([]string{"merge", "-json", "-"}, files...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("loadgen merge: %v: %s", err, benchrun.LastLine(errOut.String()))
	}
	var rep broadcast.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("loadgen merge output: %v", err)
	}
	return &rep, nil
}

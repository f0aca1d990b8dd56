package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/loadgen/sustain"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/protocol"
)

// results are what a run measured: a sample of every process at the
// start and at each step's end, and each shard's report.
type results struct {
	start   time.Time
	samples []sample // [0] at the start, [k] at step k's end
	shards  []*sustain.Report
	killAt  time.Time // zero: no replica killed
	stalled *replica  // -stall-replica's, once stopped and let go on
	final   sample    // after the shards exited
}

// sample is one reading of every process.
type sample struct {
	at        time.Time
	replicas  []procRead // in the cluster's order
	redis     []procRead
	nginx     procRead // master and workers summed (fds: the fullest worker's)
	clients   procRead // the loadgen shards summed (fds: the fullest's)
	busy, all uint64   // the machine's CPU jiffies
	memUsed   float64  // the machine's memory in use, share of all
}

// procRead is one process's (or a group's) figures; stats only for a
// replica that answered /stats.
type procRead struct {
	cpu   float64 // seconds since it started
	rss   float64 // bytes
	fds   int
	stats *protocol.Stats
	alive bool
	// A group's CPU seconds by pid: a process that ends (or cannot be
	// read) within a step takes its part out of the sum, which the
	// step's difference must not count as negative CPU.
	cpuByPID map[int]float64
}

// cpuSince is the CPU seconds g's processes spent since a: a process
// read at both counts its difference, one new since a all of its CPU,
// one gone since a nothing.
func (g procRead) cpuSince(a procRead) float64 {
	var s float64
	for pid, cpu := range g.cpuByPID {
		s += max(0, cpu-a.cpuByPID[pid])
	}
	return s
}

// drive runs the loadgen shards through the steps, reading every process
// at each step's end, kills a replica at -kill-replica and stalls one at
// -stall-replica.
func drive(ctx context.Context, o options, sz sizing, c *cluster, bins *benchrun.Binaries, stderr io.Writer) (*results, error) {
	res := &results{}
	// The shards start their first step together with the readings, at
	// res.start: a shard's own start-up, seconds on a loaded machine,
	// would otherwise shift its steps' ends past the readings.
	res.start = time.Now().Add(shardStartup)
	shards, err := startShards(ctx, o, sz, c, bins, res.start)
	if err != nil {
		return nil, err
	}
	// The baseline a moment before the shards dial, as every reading
	// comes before its step's end: read at res.start, a replica could
	// already count a shard's first handshakes in it.
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(res.start.Add(-readAhead))):
	}
	res.samples = append(res.samples, c.read(nil))
	fmt.Fprintf(stderr, "%d loadgen shards, %d connections in %d steps of %s (%d replicas, %d nginx workers, open-files limit %d)\n",
		len(shards), o.conns, o.steps, o.stepDuration, len(c.replicas), sz.nginxWorkers, sz.limit)
	var killWG sync.WaitGroup
	if o.killAt > 0 {
		killWG.Go(func() {
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(res.start.Add(o.killAt))):
				res.killAt = time.Now()
				c.kill(stderr)
			}
		})
	}
	if o.stallFor > 0 {
		killWG.Go(func() {
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(res.start.Add(o.stallAt))):
				res.stalled = c.stall(ctx, o.stallFor, stderr)
			}
		})
	}
	// Each reading comes a moment before the shards end their step (they
	// started a moment after res.start, and each takes its step's figures
	// at its end): the servers' reading and the clients' are of the same
	// connections, and the last one comes before the clients leave.
	pids := shardPIDs(shards)
	for k := range o.steps {
		end := res.start.Add(time.Duration(k+1)*o.stepDuration - readAhead)
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(end)):
		}
		if ctx.Err() != nil {
			break
		}
		s := c.read(pids)
		res.samples = append(res.samples, s)
		fmt.Fprintf(stderr, "step %d/%d: %d connections on the replicas\n", k+1, o.steps, s.active())
	}
	killWG.Wait()
	res.shards, err = waitShards(shards)
	// Once the clients have gone: the servers' counts of the whole run.
	res.final = c.read(nil)
	return res, err
}

// readAhead is how long before a step's end the processes are read.
const readAhead = 250 * time.Millisecond

// shardStartup is the time the shards are given to start before their
// first step (loadgen sustain -start-at).
const shardStartup = time.Second

// shard is one loadgen process.
type shard struct {
	cmd  *exec.Cmd
	json string
	log  string
	done chan error
}

// startShards starts one `loadgen sustain -shard I/N` per shard, each to
// its own nginx port; an interrupt reaches them as SIGINT, so that each
// writes its partial report.
func startShards(ctx context.Context, o options, sz sizing, c *cluster, bins *benchrun.Binaries, startAt time.Time) ([]*shard, error) {
	var out []*shard
	for i := range sz.shards {
		s := &shard{json: filepath.Join(c.dir, fmt.Sprintf("shard%d.json", i+1)), log: filepath.Join(c.dir, fmt.Sprintf("shard%d.log", i+1)), done: make(chan error, 1)}
		args := []string{"sustain", "-url", "http://127.0.0.1:" + strconv.Itoa(c.ports[i]), "-admin", "",
			"-n", strconv.Itoa(o.conns), "-shard", fmt.Sprintf("%d/%d", i+1, sz.shards), "-steps", strconv.Itoa(o.steps),
			"-step-duration", o.stepDuration.String(), "-emit-interval", o.emitInterval, "-rooms", strconv.Itoa(o.rooms),
			"-push-rate", strconv.FormatFloat(o.pushRate, 'f', -1, 64), "-churn", strconv.FormatFloat(o.churn, 'f', -1, 64),
			"-client", o.client, "-loop=" + strconv.FormatBool(o.clientLoop), "-json", s.json, "-start-at", startAt.UTC().Format(time.RFC3339Nano)}
		if src := sz.shardSources(i); src != "" {
			args = append(args, "-sources", src)
		}
		s.cmd = exec.CommandContext(ctx, bins.Loadgen, args...)
		s.cmd.Cancel = func() error { return s.cmd.Process.Signal(os.Interrupt) }
		s.cmd.WaitDelay = 30 * time.Second
		f, err := os.Create(s.log)
		if err != nil {
			return out, err
		}
		s.cmd.Stdout, s.cmd.Stderr = f, f
		if err := s.cmd.Start(); err != nil {
			f.Close()
			return out, fmt.Errorf("loadgen shard %d: %v", i+1, err)
		}
		c.record(fmt.Sprintf("loadgen%d", i+1), s.cmd.Process.Pid)
		go func() {
			s.done <- s.cmd.Wait()
			f.Close()
		}()
		out = append(out, s)
	}
	return out, nil
}

func shardPIDs(shards []*shard) []int {
	var pids []int
	for _, s := range shards {
		pids = append(pids, s.cmd.Process.Pid)
	}
	return pids
}

// waitShards waits for every shard and reads its report. A shard that
// failed its own pass/fail (exit 1) still wrote one; the experiment
// judges the whole run itself.
func waitShards(shards []*shard) ([]*sustain.Report, error) {
	var reps []*sustain.Report
	var errs []string
	for i, s := range shards {
		err := <-s.done
		b, rerr := os.ReadFile(s.json)
		var rep sustain.Report
		if rerr == nil {
			rerr = json.Unmarshal(b, &rep)
		}
		if rerr != nil {
			log, _ := os.ReadFile(s.log)
			errs = append(errs, fmt.Sprintf("shard %d: %v (%v): %s", i+1, rerr, err, benchrun.LastLine(string(log))))
			continue
		}
		reps = append(reps, &rep)
	}
	if len(reps) == 0 && len(errs) > 0 {
		return nil, fmt.Errorf("no shard wrote its report: %s", strings.Join(errs, "; "))
	}
	return reps, nil
}

// read takes one sample of every process; clients are the shards' pids.
func (c *cluster) read(clients []int) sample {
	s := sample{at: time.Now(), replicas: make([]procRead, len(c.replicas))}
	// At once: a busy replica's /stats may take seconds, which one after
	// another would add up into the step's window.
	var wg sync.WaitGroup
	for i, r := range c.replicas {
		wg.Go(func() {
			pr := readProc(r.p.PID())
			if st, err := r.p.ReadStats(); err == nil {
				pr.stats = &st
			}
			s.replicas[i] = pr
		})
	}
	// The rest meanwhile: the shards end their step a moment after this
	// reading starts, and a replica slow to answer must not delay their
	// reading past it.
	for _, p := range c.redis {
		s.redis = append(s.redis, readProc(p.PID()))
	}
	s.nginx = readGroup(c.nginxPIDs)
	s.clients = readGroup(clients)
	s.busy, s.all, _ = benchrun.MachineJiffies()
	s.memUsed = memoryInUse()
	wg.Wait()
	return s
}

// readProc reads a process from /proc; alive false when it has gone.
func readProc(pid int) procRead {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return procRead{}
	}
	r := procRead{cpu: st.CPUSeconds(), alive: true}
	r.rss, _ = procfs.ResidentBytes(pid)
	r.fds, _ = procfs.OpenFileCount(pid)
	return r
}

// readGroup sums the CPU and memory of pids, and keeps the most
// descriptors any one of them holds (each has its own limit).
func readGroup(pids []int) procRead {
	g := procRead{cpuByPID: map[int]float64{}}
	for _, pid := range pids {
		r := readProc(pid)
		if r.alive {
			g.cpuByPID[pid] = r.cpu
		}
		g.cpu += r.cpu
		g.rss += r.rss
		g.fds = max(g.fds, r.fds)
		g.alive = g.alive || r.alive
	}
	return g
}

// active is the connections the replicas hold, summed.
func (s sample) active() int64 {
	var n int64
	for _, r := range s.replicas {
		if r.stats != nil {
			n += r.stats.ConnectionsActive
		}
	}
	return n
}

// memoryInUse is the machine's memory in use (MemTotal less
// MemAvailable in /proc/meminfo), as a share of MemTotal; 0 when unknown.
func memoryInUse() float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	fields := map[string]float64{}
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(line, ":")
		if f := strings.Fields(rest); ok && len(f) > 0 {
			fields[name], _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if fields["MemTotal"] == 0 {
		return 0
	}
	return (fields["MemTotal"] - fields["MemAvailable"]) / fields["MemTotal"]
}

// Command cluster is the cluster benchmark (make bench-cluster): what
// joining replicas on Redis costs, in one run, as ratios.
//
//  1. Timed push (-push-interval 100ms -push-size 100) to S subscribers on
//     one replica, then on R replicas of S/R each on one redis-server: the
//     same three `loadgen broadcast -push -shard I/3` processes in both
//     setups (each shard on its own replica in the cluster), push latency
//     p50/p99 from their merged histograms, and over a window in which
//     every subscriber is connected: the replicas' CPU (/stats cpu_seconds,
//     summed) per message they delivered (/stats messages_sent, summed),
//     and redis-server's CPU (/proc). Goal: a cluster replica spends no
//     more than 1.3x the single process's CPU per delivered message.
//
//  2. Socket.IO room broadcast: two knowngood `empty` replicas with -redis
//     against two Node socket.io + @socket.io/redis-adapter servers
//     (scripts/node/sio-cluster-server.mjs), each cluster on its own
//     redis-server, driven by the same socket.io-client script
//     (scripts/clients/sio-room-load.mjs): N sockets, half on each server,
//     all in one room, K of them emitting broadcast-room at a fixed rate.
//     Deliveries per server CPU second (/proc of the server processes over
//     the window). Goal: knowngood >= 2x Node.
//
//  3. The same room broadcast (same client, same sizes) on one process,
//     no Redis: the bare zishang520 server (scripts/bench/floors/sioserver,
//     the library with nothing of knowngood), knowngood `empty`, and Node
//     socket.io (scripts/node/sio-server.mjs). The ratios split the cost:
//     empty over bare is knowngood's own, bare over Node the library's.
//     Goal (empty): >= 2x Node's deliveries per server CPU second.
//
//     go run ./scripts/bench/cluster [-subscribers 9000] [-replicas 3] [-variants broadcast-gnet]
//     [-sockets 1000] [-senders 10] [-rate 20] [-duration 10s] [-parts push,sio,sio-single]
//     [-profile DIR]
//
// With -profile, the Go Socket.IO servers (knowngood with -pprof, the bare
// server with its pprof argument) are CPU-profiled over each measured
// window into DIR; those windows' figures then include the profiler.
//
// Run it from the repository root, after npm ci in scripts/. Everything
// listens on 127.0.0.1; every process it starts is stopped before it
// returns, on an error too.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/loadgen/broadcast"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/servers/variants"
)

var broadcastVariants = variants.NamesOf(variants.ByFamily(variants.Broadcast))

// The goals: CPU per delivered push, cluster over one process, at most;
// deliveries per server CPU second, knowngood over Node, at least.
const (
	pushGoal = 1.3
	sioGoal  = 2.0
)

// allParts are the parts, in the order they run.
var allParts = []string{"push", "sio", "sio-single"}

// shards is the number of loadgen processes of the push part, in both
// setups, so that the client side is the same.
const shards = 3

type options struct {
	subscribers int
	replicas    int
	variants    []string
	sources     string
	sockets     int
	senders     int
	rate        int
	duration    time.Duration
	parts       []string
	profileDir  string
}

func main() { benchrun.Main("bench-cluster", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-cluster", flag.ContinueOnError)
	o := options{}
	fs.IntVar(&o.subscribers, "subscribers", 9000, "push part: subscribers in all, on one replica and then spread over -replicas")
	fs.IntVar(&o.replicas, "replicas", 3, "push part: replicas of the cluster setup")
	list := fs.String("variants", benchrun.GnetBroadcast, "push part: comma-separated `list` of broadcast variants")
	fs.StringVar(&o.sources, "sources", "127.0.0.1-127.0.0.8", "push part: loadgen -sources")
	fs.IntVar(&o.sockets, "sockets", 1000, "Socket.IO part: sockets in the room, half on each server")
	fs.IntVar(&o.senders, "senders", 10, "Socket.IO part: sockets that emit broadcast-room")
	fs.IntVar(&o.rate, "rate", 20, "Socket.IO part: broadcasts per second, all senders together")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "each measured window")
	parts := fs.String("parts", strings.Join(allParts, ","), "comma-separated `list` of the parts to run: "+strings.Join(allParts, ", "))
	fs.StringVar(&o.profileDir, "profile", "", "Socket.IO parts: write a CPU profile of each Go server over its window into `dir`")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	var err error
	if o.variants, err = benchrun.Pick("variants", *list, broadcastVariants); err != nil {
		return options{}, err
	}
	if o.parts, err = benchrun.Pick("parts", *parts, allParts); err != nil {
		return options{}, err
	}
	if o.subscribers < shards || o.replicas < 2 || o.sockets < 2 || o.senders < 1 || o.senders > o.sockets || o.rate < 1 || o.duration <= 0 {
		return options{}, errors.New("invalid sizes: want -subscribers >= 3, -replicas >= 2, -sockets >= 2, 1 <= -senders <= -sockets, positive -rate and -duration")
	}
	return o, nil
}

// row is one setup's figures; a nil err and zero figures never mix.
type row struct {
	part, setup string
	clients     int
	deliveries  uint64 // messages delivered in the window
	lost        uint64
	window      float64 // seconds
	p50, p99    float64 // ms, -1 when unknown
	serverCPU   float64 // seconds, over the window
	redisCPU    float64 // seconds, -1 without Redis
	clientCPU   float64
	err         error
	ratios      []ratio // the rows this one is compared with
}

// ratio compares a row with another: CPU per delivery, this over of
// (spend), or deliveries per CPU second, this over of; goal 0 for none.
type ratio struct {
	of    *row
	name  string // "Node's"
	spend bool
	goal  float64
}

func (r *row) perCPU() float64 {
	if r.serverCPU <= 0 {
		return 0
	}
	return float64(r.deliveries) / r.serverCPU
}

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	machine := benchrun.StartMachine()
	var rows []*row
	if slices.Contains(o.parts, "push") {
		for _, v := range o.variants {
			single := pushSetup(ctx, stderr, o, bins, v, 1)
			multi := pushSetup(ctx, stderr, o, bins, v, o.replicas)
			multi.compare(single, "the 1 process's", true, pushGoal)
			rows = append(rows, single, multi)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if slices.Contains(o.parts, "sio") && ctx.Err() == nil {
		kg := sioSetup(ctx, stderr, o, sioKnowngoodRedis)
		node := sioSetup(ctx, stderr, o, sioNodeRedis)
		kg.compare(node, "Node's", false, sioGoal)
		rows = append(rows, kg, node)
	}
	if slices.Contains(o.parts, "sio-single") && ctx.Err() == nil {
		bare := sioSetup(ctx, stderr, o, sioBare)
		empty := sioSetup(ctx, stderr, o, sioEmpty)
		node := sioSetup(ctx, stderr, o, sioNode)
		bare.compare(node, "Node's", false, 0)
		empty.compare(node, "Node's", false, sioGoal)
		empty.compare(bare, "the bare server's", true, 0)
		rows = append(rows, bare, empty, node)
	}
	writeTable(stdout, o, rows, machine)
	return ctx.Err()
}

// compare adds a ratio of r to of, when both have figures.
func (r *row) compare(of *row, name string, spend bool, goal float64) {
	if r.err == nil && of.err == nil {
		r.ratios = append(r.ratios, ratio{of: of, name: name, spend: spend, goal: goal})
	}
}

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

// sioResult is the last line of sio-room-load.mjs.
type sioResult struct {
	Sockets    int      `json:"sockets"`
	Connected  int      `json:"connected"`
	Sent       uint64   `json:"sent"`
	Expected   uint64   `json:"expected"`
	Received   uint64   `json:"received"`
	Lost       uint64   `json:"lost"`
	Duplicates uint64   `json:"duplicates"`
	Window     float64  `json:"window_s"`
	P50        *float64 `json:"p50_ms"`
	P99        *float64 `json:"p99_ms"`
	ClientCPU  float64  `json:"client_cpu_s"`
}

// sioBaseline is the knowngood Socket.IO variant of the room broadcast:
// the connect model that adds nothing.
var sioBaseline = benchrun.SioBaseline

// The Socket.IO setups: knowngood `empty` and Node, two servers on a
// redis-server of their own (sio), or one process without Redis
// (sio-single), and the bare zishang520 server.
const (
	sioKnowngoodRedis = iota
	sioNodeRedis
	sioBare
	sioEmpty
	sioNode
)

// sioSetup runs a Socket.IO room broadcast on setup.
func sioSetup(ctx context.Context, stderr io.Writer, o options, setup int) *row {
	r := &row{part: "Socket.IO room", clients: o.sockets, p50: -1, p99: -1, redisCPU: -1}
	servers, redisOn := sioLabel(r, setup)
	fmt.Fprintf(stderr, "%s, %s\n", r.part, r.setup)
	var procs benchrun.Procs
	defer procs.Stop()
	var redis *harness.Process
	var url string
	var err error
	if redisOn {
		if redis, url, err = harness.StartRedis(ctx); err != nil {
			r.err = err
			return r
		}
		procs.Add(redis)
	}
	var profiles []string // URL per server, "" for none
	var ps []*harness.Process
	for i := range servers {
		p, profile, err := startSioServer(ctx, stderr, o, setup, i, url)
		if err != nil {
			r.err = err
			return r
		}
		procs.Add(p)
		ps = append(ps, p)
		profiles = append(profiles, profile)
	}
	if v := versions(ps[0].Log()); v != "" {
		if servers > 1 {
			r.setup = "Node " + v + " x 2"
		} else {
			r.setup = "Node " + v
		}
	}
	w := &sioWindow{o: o, stderr: stderr, servers: ps, redis: redis, profiles: profiles, r: r}
	w.run(ctx)
	return r
}

// sioLabel names r after setup and says how many servers it runs and
// whether they share a redis-server.
func sioLabel(r *row, setup int) (servers int, redisOn bool) {
	switch setup {
	case sioKnowngoodRedis:
		r.setup = "knowngood " + sioBaseline + " x 2, Redis"
		return 2, true
	case sioNodeRedis:
		r.setup = "Node socket.io x 2, redis-adapter"
		return 2, true
	case sioBare:
		r.part, r.setup = "Socket.IO room, 1 process", benchrun.SioFloor
	case sioEmpty:
		r.part, r.setup = "Socket.IO room, 1 process", "knowngood "+sioBaseline
	case sioNode:
		r.part, r.setup = "Socket.IO room, 1 process", "Node socket.io"
	}
	return 1, false
}

// startSioServer starts the i-th server of setup (on the redis-server at
// url, if any) and returns the URL of its CPU profile, "" for none.
func startSioServer(ctx context.Context, stderr io.Writer, o options, setup, i int, url string) (p *harness.Process, profile string, err error) {
	switch setup {
	case sioKnowngoodRedis, sioEmpty:
		args := []string{"-variant", sioBaseline}
		if url != "" {
			args = append(args, "-redis", url)
		}
		if o.profileDir != "" {
			args = append(args, "-pprof")
		}
		if p, err = benchrun.Start(ctx, stderr, nil, args...); err == nil && o.profileDir != "" {
			profile = p.AdminURL() + "/debug/pprof/profile"
		}
	case sioBare:
		var extra []string
		if o.profileDir != "" {
			extra = []string{"pprof"}
		}
		if p, err = benchrun.StartSioFloor(ctx, stderr, extra...); err == nil && o.profileDir != "" {
			profile = benchrun.SioFloorProfile(p)
		}
	case sioNodeRedis:
		p, err = harness.StartProcess(ctx, fmt.Sprintf("node sio-cluster-server %d", i+1),
			[]string{"node", "scripts/node/sio-cluster-server.mjs", "0", url})
		if err != nil {
			err = fmt.Errorf("%w (npm ci in scripts/ first?)", err)
		} else {
			fmt.Fprintf(stderr, "%s listening on %s\n", p.Name, p.Addr)
		}
	case sioNode:
		p, err = benchrun.StartNode(ctx, stderr, "sio-server.mjs", "node sio-server")
	}
	return p, profile, err
}

// sioWindow is one run of sio-room-load.mjs against servers: the server
// CPU is read when the client says its window starts and again once its
// last delivery has arrived (or its drain time passed). The profiles, if
// asked for, cover the window's o.duration.
type sioWindow struct {
	o        options
	stderr   io.Writer
	servers  []*harness.Process
	redis    *harness.Process
	profiles []string
	r        *row

	profiling   sync.WaitGroup
	profileMu   sync.Mutex
	profileErrs []error
}

// cpu reads the servers' CPU seconds, summed, and redis-server's.
func (w *sioWindow) cpu() (server, redisS float64, err error) {
	for _, p := range w.servers {
		s, err := benchrun.ProcCPUSeconds(p.PID())
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %v", p.Name, err)
		}
		server += s
	}
	if w.redis != nil {
		redisS, err = benchrun.ProcCPUSeconds(w.redis.PID())
	}
	return server, redisS, err
}

// run drives the client and fills in w.r.
func (w *sioWindow) run(ctx context.Context) {
	o, r := w.o, w.r
	cctx, cancel := context.WithTimeout(ctx, o.duration+3*time.Minute)
	defer cancel()
	args := []string{"scripts/clients/sio-room-load.mjs", "--sockets", strconv.Itoa(o.sockets), "--senders", strconv.Itoa(o.senders),
		"--rate", strconv.Itoa(o.rate), "--duration-ms", strconv.FormatInt(o.duration.Milliseconds(), 10)}
	for _, p := range w.servers {
		args = append(args, "--url", "http://"+p.Addr)
	}
	cmd := exec.CommandContext(cctx, "node", args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.err = err
		return
	}
	if err := cmd.Start(); err != nil {
		r.err = err
		return
	}
	s0, rc0, last := w.read(cctx, stdout)
	s1, rc1, cerr := w.cpu()
	w.profiling.Wait()
	if err := errors.Join(w.profileErrs...); err != nil {
		fmt.Fprintf(w.stderr, "profiles: %v\n", err)
	}
	if err := cmd.Wait(); err != nil {
		r.err = fmt.Errorf("sio-room-load: %v: %s", err, benchrun.LastLine(errOut.String()))
		return
	}
	if r.err == nil {
		r.err = cerr
	}
	if r.err != nil {
		return
	}
	w.fill(last, s1-s0, rc1-rc0)
}

// read follows the client's lines: at "start" it reads the CPU and starts
// the profiles; it returns the CPU then and the client's last line.
func (w *sioWindow) read(ctx context.Context, stdout io.Reader) (s0, rc0 float64, last []byte) {
	var err error
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Bytes()
		var m struct {
			Msg string `json:"msg"`
		}
		_ = json.Unmarshal(line, &m)
		switch m.Msg {
		case "start":
			if s0, rc0, err = w.cpu(); err != nil {
				w.r.err = err
			}
			w.startProfiles(ctx)
		case "end":
		default:
			last = append(last[:0], line...)
		}
	}
	return s0, rc0, last
}

// startProfiles fetches a CPU profile of each server that offers one,
// over the window, into o.profileDir.
func (w *sioWindow) startProfiles(ctx context.Context) {
	for i, u := range w.profiles {
		if u == "" {
			continue
		}
		path := filepath.Join(w.o.profileDir, fmt.Sprintf("%s-%d.pprof", strings.ReplaceAll(w.r.setup, " ", "-"), i+1))
		w.profiling.Go(func() {
			err := benchrun.Fetch(ctx, fmt.Sprintf("%s?seconds=%d", u, max(1, int(w.o.duration.Seconds()))), path)
			if err == nil {
				fmt.Fprintf(w.stderr, "CPU profile of %s: %s\n", w.servers[i].Name, path)
			}
			w.profileMu.Lock()
			w.profileErrs = append(w.profileErrs, err)
			w.profileMu.Unlock()
		})
	}
}

// fill puts the client's result line and the CPU over the window in w.r.
func (w *sioWindow) fill(last []byte, serverCPU, redisCPU float64) {
	r := w.r
	var res sioResult
	if err := json.Unmarshal(last, &res); err != nil {
		r.err = fmt.Errorf("sio-room-load output %q: %v", last, err)
		return
	}
	r.deliveries, r.lost, r.window, r.clientCPU = res.Received, res.Lost, res.Window, res.ClientCPU
	r.serverCPU = serverCPU
	if w.redis != nil {
		r.redisCPU = redisCPU
	}
	if res.P50 != nil && res.P99 != nil {
		r.p50, r.p99 = *res.P50, *res.P99
	}
	if res.Connected < res.Sockets {
		r.err = fmt.Errorf("%d of %d sockets connected at the end", res.Connected, res.Sockets)
	}
}

// versions reads socket.io's and the adapter's (if any) versions from a
// Node server's "listening" line; "" for another server.
func versions(log string) string {
	for line := range strings.SplitSeq(log, "\n") {
		var l struct {
			Msg      string `json:"msg"`
			SocketIO string `json:"socketio"`
			Adapter  string `json:"adapter"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" && l.SocketIO != "" {
			if l.Adapter == "" {
				return "socket.io " + l.SocketIO
			}
			return fmt.Sprintf("socket.io %s, redis-adapter %s", l.SocketIO, l.Adapter)
		}
	}
	return ""
}

func writeTable(w io.Writer, o options, rows []*row, machine *benchrun.Machine) {
	fmt.Fprintf(w, "\nCluster on Redis, %s windows. push: the timed push (every 100 ms, 100 bytes) to %d subscribers, the same 3 `loadgen broadcast -push -shard I/3` processes in both setups; deliveries = the replicas' messages_sent over the window (every subscriber connected), CPU = their cpu_seconds summed. Socket.IO room: %d socket.io-client sockets (websocket), all in one room (half on each server of 2); %d of them emit broadcast-room, %d/s in all; deliveries = \"broadcast\" events the clients received, CPU = the server processes' (/proc); \"1 process\": the same on one server, no Redis. Redis CPU from /proc.\n\n",
		o.duration, o.subscribers, o.sockets, o.senders, o.rate)
	fmt.Fprintln(w, "| part | setup | clients | deliveries | lost | deliveries/s | p50 ms | p99 ms | server CPU s | Redis CPU s | client CPU s | server CPU µs per delivery | deliveries per server CPU s | ratio | goal | met |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(w, "| %s | %s | %d | error: %s | | | | | | | | | | | | |\n", r.part, r.setup, r.clients, benchrun.Cell(r.err.Error()))
			continue
		}
		var ratios []string
		goal, met := "-", "-"
		for _, c := range r.ratios {
			b := c.of
			if r.perCPU() <= 0 || b.perCPU() <= 0 {
				continue
			}
			var x float64
			var ok bool
			if c.spend {
				x = b.perCPU() / r.perCPU() // CPU per delivery, this over b
				ratios = append(ratios, fmt.Sprintf("%.2fx %s CPU per delivery", x, c.name))
				ok = x <= c.goal
			} else {
				x = r.perCPU() / b.perCPU()
				ratios = append(ratios, fmt.Sprintf("%.2fx %s deliveries per CPU s", x, c.name))
				ok = x >= c.goal
			}
			if c.goal > 0 {
				if c.spend {
					goal = fmt.Sprintf("<= %gx %s", c.goal, c.name)
				} else {
					goal = fmt.Sprintf(">= %gx %s", c.goal, c.name)
				}
				met = benchrun.Met(ok && r.lost == 0)
			}
		}
		ratio := "-"
		if len(ratios) > 0 {
			ratio = strings.Join(ratios, "; ")
		}
		lost := strconv.FormatUint(r.lost, 10)
		if r.lost > 0 {
			lost = "**" + lost + "**"
		}
		us, per := "-", "-"
		if r.deliveries > 0 && r.serverCPU > 0 {
			us = strconv.FormatFloat(r.serverCPU*1e6/float64(r.deliveries), 'f', 2, 64)
			per = strconv.FormatFloat(r.perCPU(), 'f', 0, 64)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %.0f | %s | %s | %.2f | %s | %.2f | %s | %s | %s | %s | %s |\n",
			r.part, r.setup, r.clients, r.deliveries, lost, float64(r.deliveries)/r.window, benchrun.Known(r.p50, 1), benchrun.Known(r.p99, 1),
			r.serverCPU, benchrun.Known(r.redisCPU, 2), r.clientCPU, us, per, ratio, goal, met)
	}
	fmt.Fprintf(w, "\n%s\n", machine.Summary())
}

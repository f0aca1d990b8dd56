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
//     go run ./scripts/bench/cluster [-subscribers 9000] [-replicas 3] [-variants broadcast-gnet]
//     [-sockets 1000] [-senders 10] [-rate 20] [-duration 10s] [-parts push,sio]
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
}

func main() { benchrun.Main("bench-cluster", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-cluster", flag.ContinueOnError)
	o := options{}
	fs.IntVar(&o.subscribers, "subscribers", 9000, "push part: subscribers in all, on one replica and then spread over -replicas")
	fs.IntVar(&o.replicas, "replicas", 3, "push part: replicas of the cluster setup")
	list := fs.String("variants", "broadcast-gnet", "push part: comma-separated `list` of broadcast variants")
	fs.StringVar(&o.sources, "sources", "127.0.0.1-127.0.0.8", "push part: loadgen -sources")
	fs.IntVar(&o.sockets, "sockets", 1000, "Socket.IO part: sockets in the room, half on each server")
	fs.IntVar(&o.senders, "senders", 10, "Socket.IO part: sockets that emit broadcast-room")
	fs.IntVar(&o.rate, "rate", 20, "Socket.IO part: broadcasts per second, all senders together")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "each measured window")
	parts := fs.String("parts", "push,sio", "comma-separated `list` of the parts to run: push, sio")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	var err error
	if o.variants, err = benchrun.Pick("variants", *list, broadcastVariants); err != nil {
		return options{}, err
	}
	if o.parts, err = benchrun.Pick("parts", *parts, []string{"push", "sio"}); err != nil {
		return options{}, err
	}
	if o.subscribers < shards || o.replicas < 2 || o.sockets < 2 || o.senders < 1 || o.senders > o.sockets || o.rate < 1 || o.duration <= 0 {
		return options{}, errors.New("invalid sizes: want -subscribers >= 3, -replicas >= 2, -sockets >= 2, 1 <= -senders <= -sockets, positive -rate and -duration")
	}
	return o, nil
}

// row is one setup's figures; a nil err and zero figures never mix.
type row struct {
	part, setup  string
	clients      int
	deliveries   uint64 // messages delivered in the window
	lost         uint64
	window       float64 // seconds
	p50, p99     float64 // ms, -1 when unknown
	serverCPU    float64 // seconds, over the window
	redisCPU     float64 // seconds, -1 without Redis
	clientCPU    float64
	err          error
	ratioOf      *row // the row this one is compared with
	ratioIsSpend bool // true: CPU per delivery, this/ratioOf; false: deliveries per CPU s, this/ratioOf
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
			if single.err == nil && multi.err == nil {
				multi.ratioOf, multi.ratioIsSpend = single, true
			}
			rows = append(rows, single, multi)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if slices.Contains(o.parts, "sio") {
		kg := sioSetup(ctx, stderr, o, "knowngood")
		node := sioSetup(ctx, stderr, o, "node")
		if kg.err == nil && node.err == nil {
			kg.ratioOf = node
		}
		rows = append(rows, kg, node)
	}
	writeTable(stdout, o, rows, machine)
	return ctx.Err()
}

// stopAll stops every process started, in reverse order. stop has a
// pointer receiver so that `defer procs.stop()`, evaluated while procs is
// still empty, stops what was added after it.
type stopAll []*harness.Process

func (s *stopAll) add(p *harness.Process) { *s = append(*s, p) }
func (s *stopAll) stop() {
	for i := len(*s) - 1; i >= 0; i-- {
		_ = (*s)[i].Stop()
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
	var procs stopAll
	defer procs.stop()
	args := []string{"-variant", variant, "-push-interval", "100ms", "-push-size", "100"}
	var redis *harness.Process
	if n > 1 {
		var url string
		var err error
		if redis, url, err = harness.StartRedis(ctx); err != nil {
			r.err = err
			return r
		}
		procs.add(redis)
		args = append(args, "-redis", url)
	}
	var replicas []*harness.Process
	var admins []string
	for range n {
		p, err := benchrun.Start(ctx, stderr, nil, args...)
		if err != nil {
			r.err = err
			return r
		}
		procs.add(p)
		replicas = append(replicas, p)
		admins = append(admins, p.AdminURL())
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
	var wg sync.WaitGroup
	errs := make([]error, shards)
	files := make([]string, shards)
	for i := range shards {
		files[i] = filepath.Join(dir, fmt.Sprintf("shard%d.json", i+1))
		url := "ws://" + replicas[i%n].Addr + "/"
		cmd := exec.CommandContext(lctx, bins.Loadgen, "broadcast", "-push", "-url", url, "-admin", strings.Join(admins, ","),
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
	// The window gives up as soon as every shard has exited: a shard that
	// failed says why, rather than the wait for its subscribers timing out.
	wctx, stopWindow := context.WithCancel(lctx)
	exited := make(chan struct{})
	go func() {
		wg.Wait()
		close(exited)
		stopWindow()
	}()
	werr := pushWindow(wctx, o, replicas, redis, r)
	<-exited
	stopWindow()
	if err := errors.Join(errs...); err != nil {
		r.err = err
		return r
	}
	if werr != nil {
		r.err = werr
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
	if err := sleep(ctx, 2*time.Second); err != nil {
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
	if err := sleep(ctx, o.duration); err != nil {
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

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
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

// sioSetup runs the Socket.IO part on two servers of kind (knowngood or
// node) on a redis-server of their own.
func sioSetup(ctx context.Context, stderr io.Writer, o options, kind string) *row {
	r := &row{part: "Socket.IO room", clients: o.sockets, p50: -1, p99: -1, redisCPU: -1}
	if kind == "knowngood" {
		r.setup = "knowngood empty x 2, Redis"
	} else {
		r.setup = "Node socket.io x 2, redis-adapter"
	}
	fmt.Fprintf(stderr, "Socket.IO room broadcast, %s\n", r.setup)
	var procs stopAll
	defer procs.stop()
	redis, url, err := harness.StartRedis(ctx)
	if err != nil {
		r.err = err
		return r
	}
	procs.add(redis)
	var servers []*harness.Process
	for i := range 2 {
		var p *harness.Process
		if kind == "knowngood" {
			p, err = benchrun.Start(ctx, stderr, nil, "-variant", "empty", "-redis", url)
		} else {
			p, err = harness.StartProcess(ctx, fmt.Sprintf("node sio-cluster-server %d", i+1),
				[]string{"node", "scripts/node/sio-cluster-server.mjs", "0", url})
			if err != nil {
				err = fmt.Errorf("%w (npm ci in scripts/ first?)", err)
			} else {
				fmt.Fprintf(stderr, "%s listening on %s\n", p.Name, p.Addr)
			}
		}
		if err != nil {
			r.err = err
			return r
		}
		procs.add(p)
		servers = append(servers, p)
	}
	if kind == "node" {
		if v := versions(servers[0].Log()); v != "" {
			r.setup = "Node " + v + " x 2"
		}
	}

	cpu := func() (server, redisS float64, err error) {
		for _, p := range servers {
			s, err := benchrun.ProcCPUSeconds(p.PID())
			if err != nil {
				return 0, 0, fmt.Errorf("%s: %v", p.Name, err)
			}
			server += s
		}
		redisS, err = benchrun.ProcCPUSeconds(redis.PID())
		return server, redisS, err
	}
	cctx, cancel := context.WithTimeout(ctx, o.duration+3*time.Minute)
	defer cancel()
	args := []string{"scripts/clients/sio-room-load.mjs", "--sockets", strconv.Itoa(o.sockets), "--senders", strconv.Itoa(o.senders),
		"--rate", strconv.Itoa(o.rate), "--duration-ms", strconv.FormatInt(o.duration.Milliseconds(), 10)}
	for _, p := range servers {
		args = append(args, "--url", "http://"+p.Addr)
	}
	cmd := exec.CommandContext(cctx, "node", args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.err = err
		return r
	}
	if err := cmd.Start(); err != nil {
		r.err = err
		return r
	}
	// The server CPU is read when the client says its window starts and
	// again once its last delivery has arrived (or its drain time passed).
	var s0, rc0 float64
	var last []byte
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Bytes()
		var m struct {
			Msg string `json:"msg"`
		}
		_ = json.Unmarshal(line, &m)
		switch m.Msg {
		case "start":
			if s0, rc0, err = cpu(); err != nil {
				r.err = err
			}
		case "end":
		default:
			last = append(last[:0], line...)
		}
	}
	s1, rc1, cerr := cpu()
	if err := cmd.Wait(); err != nil {
		r.err = fmt.Errorf("sio-room-load: %v: %s", err, benchrun.LastLine(errOut.String()))
		return r
	}
	if r.err == nil {
		r.err = cerr
	}
	if r.err != nil {
		return r
	}
	var res sioResult
	if err := json.Unmarshal(last, &res); err != nil {
		r.err = fmt.Errorf("sio-room-load output %q: %v", last, err)
		return r
	}
	r.deliveries, r.lost, r.window, r.clientCPU = res.Received, res.Lost, res.Window, res.ClientCPU
	r.serverCPU, r.redisCPU = s1-s0, rc1-rc0
	if res.P50 != nil && res.P99 != nil {
		r.p50, r.p99 = *res.P50, *res.P99
	}
	if res.Connected < res.Sockets {
		r.err = fmt.Errorf("%d of %d sockets connected at the end", res.Connected, res.Sockets)
	}
	return r
}

// versions reads socket.io's and the adapter's versions from the Node
// server's "listening" line.
func versions(log string) string {
	for line := range strings.SplitSeq(log, "\n") {
		var l struct {
			Msg      string `json:"msg"`
			SocketIO string `json:"socketio"`
			Adapter  string `json:"adapter"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" && l.SocketIO != "" {
			return fmt.Sprintf("socket.io %s, redis-adapter %s", l.SocketIO, l.Adapter)
		}
	}
	return ""
}

func writeTable(w io.Writer, o options, rows []*row, machine *benchrun.Machine) {
	fmt.Fprintf(w, "\nCluster on Redis, %s windows. push: the timed push (every 100 ms, 100 bytes) to %d subscribers, the same 3 `loadgen broadcast -push -shard I/3` processes in both setups; deliveries = the replicas' messages_sent over the window (every subscriber connected), CPU = their cpu_seconds summed. Socket.IO room: %d socket.io-client sockets (websocket), half on each server, all in one room; %d of them emit broadcast-room, %d/s in all; deliveries = \"broadcast\" events the clients received, CPU = the server processes' (/proc). Redis CPU from /proc.\n\n",
		o.duration, o.subscribers, o.sockets, o.senders, o.rate)
	fmt.Fprintln(w, "| part | setup | clients | deliveries | lost | deliveries/s | p50 ms | p99 ms | server CPU s | Redis CPU s | client CPU s | server CPU µs per delivery | deliveries per server CPU s | ratio | goal | met |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(w, "| %s | %s | %d | error: %s | | | | | | | | | | | | |\n", r.part, r.setup, r.clients, oneLine(r.err.Error()))
			continue
		}
		ratio, goal, met := "-", "-", "-"
		if b := r.ratioOf; b != nil && r.perCPU() > 0 && b.perCPU() > 0 {
			if r.ratioIsSpend {
				x := b.perCPU() / r.perCPU() // CPU per delivery, this over b
				ratio, goal, met = fmt.Sprintf("%.2fx the 1 process's CPU per delivery", x), fmt.Sprintf("<= %.1fx", pushGoal), yesNo(x <= pushGoal && r.lost == 0)
			} else {
				x := r.perCPU() / b.perCPU()
				ratio, goal, met = fmt.Sprintf("%.2fx Node's deliveries per CPU s", x), fmt.Sprintf(">= %.0fx", sioGoal), yesNo(x >= sioGoal && r.lost == 0)
			}
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
			r.part, r.setup, r.clients, r.deliveries, lost, float64(r.deliveries)/r.window, fmtMS(r.p50), fmtMS(r.p99),
			r.serverCPU, fmtCPU(r.redisCPU), r.clientCPU, us, per, ratio, goal, met)
	}
	fmt.Fprintf(w, "\n%s\n", machine.Summary())
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func fmtMS(v float64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func fmtCPU(v float64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "/") }

// Command broadcast is the fan-out benchmark (make bench-broadcast): for
// each target and each subscriber count it starts a fresh server with the
// timed push (every 100 ms, 100-byte payload) and runs `loadgen broadcast
// -push` against it (with -modes push,broadcast, then also 10 senders in
// broadcast mode on the knowngood targets). The targets are the broadcast
// variants and two yardsticks measured the same way in the same run:
//
//   - floor: scripts/bench/floors/fanout, the cheapest server that passes
//     the same client: one push frame made per push and written to every
//     subscriber with one write each, nothing else;
//   - node-ws: scripts/node/ws-push-server.mjs, Node's `ws` with the same
//     push and join echo.
//
// For each it prints the server's CPU per delivered message (from
// /proc/PID/stat over the measured window, alike for every target), the
// push latency (p50, p99) and the time to get every subscriber in (from
// loadgen's start to its "measuring" line: dials, upgrades, join echoes),
// each beside its ratio to the floor or to Node and the goal, and ends
// with how busy the machine was.
//
//	go run ./scripts/bench/broadcast [-subscribers 1000,10000] [-duration 5s] [-modes push]
//	        [-targets broadcast-gnet,broadcast-gorilla,broadcast-coder,floor,node-ws]
//
// Run it from the repository root. Everything listens on 127.0.0.1; every
// process it starts is stopped before it returns.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
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

// The yardsticks.
const (
	floorTarget = "floor"
	nodeTarget  = "node-ws"
)

var allTargets = append(append([]string{}, broadcastVariants...), floorTarget, nodeTarget)

// goalsOf are lib's goals in the registry: the push fan-out p99 at 10,000
// subscribers (PushP99ms) and the server CPU per delivery as a multiple of
// the floor's (DeliveryCPU); every knowngood target's against Node's is
// nodeGoal.
func goalsOf(lib variants.Library) (variants.Goals, bool) {
	w, ok := variants.LookupWebSocketLibrary(lib)
	return w.Goals, ok
}

const (
	nodeGoal        = 0.5
	goalSubscribers = 10000
)

type options struct {
	subscribers []int
	senders     int
	rate        int
	duration    time.Duration
	timeout     time.Duration
	sources     string
	targets     []string
	modes       []string
}

func main() { benchrun.Main("bench-broadcast", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-broadcast", flag.ContinueOnError)
	subs := fs.String("subscribers", "1000,10000", "comma-separated subscriber `counts`")
	senders := fs.Int("senders", 10, "loadgen -senders in broadcast mode")
	rate := fs.Int("rate", 10, "loadgen -rate in broadcast mode: broadcasts per second, all senders together")
	duration := fs.Duration("duration", 5*time.Second, "each measured window")
	timeout := fs.Duration("join-timeout", 10*time.Second, "loadgen -timeout: bounds each dial and the wait for every join echo; a target that has not taken every subscriber by then is measured with those it took, and the table says so")
	sources := fs.String("sources", "127.0.0.1-127.0.0.8", "loadgen -sources")
	list := fs.String("targets", strings.Join(allTargets, ","), "comma-separated `list` of targets: broadcast variants, "+floorTarget+", "+nodeTarget)
	modes := fs.String("modes", "push", "comma-separated `modes`: push (every target), broadcast (10 senders; knowngood targets only: the floor and Node only push)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{senders: *senders, rate: *rate, duration: *duration, timeout: *timeout, sources: *sources}
	var err error
	if o.subscribers, err = benchrun.Counts("subscribers", *subs); err != nil {
		return options{}, err
	}
	if o.targets, err = benchrun.Pick("targets", *list, allTargets); err != nil {
		return options{}, err
	}
	if o.modes, err = benchrun.Pick("modes", *modes, []string{"push", "broadcast"}); err != nil {
		return options{}, err
	}
	if o.senders < 1 || o.rate < 1 || o.duration <= 0 || o.timeout <= 0 {
		return options{}, errors.New("invalid -senders, -rate, -duration or -join-timeout: want positive values")
	}
	return o, nil
}

// row is one loadgen run.
type row struct {
	target string
	n      int
	mode   string
	rep    *broadcast.Report
	err    error
	// accept: from loadgen's start until every member had joined (or
	// -join-timeout gave up on the rest).
	accept time.Duration
	// cpu: the server's CPU seconds over the measured window, from /proc.
	cpu float64
}

// usPerDelivery is the server's CPU per delivered message, in µs; 0 when
// unknown.
// In broadcast mode the target's timed pushes, which go on, count too.
func (r row) usPerDelivery() float64 {
	if r.rep == nil || r.cpu <= 0 {
		return 0
	}
	n := r.rep.Received + r.rep.PushesReceived
	if n == 0 {
		return 0
	}
	return r.cpu / float64(n) * 1e6
}

func isKnowngood(target string) bool { return target != floorTarget && target != nodeTarget }

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	machine := benchrun.StartMachine()
	floorBin := ""
	if slices.Contains(o.targets, floorTarget) {
		bin, err := harness.Build("./scripts/bench/floors/fanout", "fanout-floor")
		if err != nil {
			return fmt.Errorf("building the floor: %v", err)
		}
		floorBin = bin
	}
	var rows []row
	for _, t := range o.targets {
		for _, n := range o.subscribers {
			p, url, admin, err := start(ctx, stderr, t, floorBin)
			if err != nil {
				return err
			}
			for _, mode := range o.modes {
				if mode == "broadcast" && !isKnowngood(t) {
					continue
				}
				r := measure(ctx, stderr, o, bins.Loadgen, p, url, admin, t, n, mode)
				if r.err != nil {
					fmt.Fprintf(stderr, "  %s %d %s: %v\n", t, n, mode, r.err)
				}
				rows = append(rows, r)
			}
			_ = p.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	writeTables(stdout, o, rows)
	fmt.Fprintf(stdout, "\n%s\n", machine.Summary())
	return nil
}

func start(ctx context.Context, stderr io.Writer, target, floorBin string) (p *harness.Process, url, admin string, err error) {
	switch target {
	case floorTarget:
		p, err = harness.StartProcess(ctx, "floor", []string{floorBin, "-push-interval", "100ms", "-push-size", "100"})
		if err == nil {
			fmt.Fprintf(stderr, "floor listening on %s\n", p.Addr)
		}
	case nodeTarget:
		p, err = benchrun.StartNode(ctx, stderr, "ws-push-server.mjs", nodeTarget)
	default:
		p, err = benchrun.Start(ctx, stderr, nil, "-variant", target, "-push-interval", "100ms", "-push-size", "100")
		if err == nil {
			admin = p.AdminURL()
		}
	}
	if err != nil {
		return nil, "", "", err
	}
	return p, "ws://" + p.Addr + "/", admin, nil
}

// measuringLine is the line loadgen writes once every member has joined,
// as the window starts.
const measuringLine = "; measuring for "

// watch passes loadgen's stderr on to buf and calls began once, at the
// line that starts the window.
type watch struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	seen  bool
	began func()
}

func (w *watch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if !w.seen && strings.Contains(w.buf.String(), measuringLine) {
		w.seen = true
		go w.began()
	}
	return len(b), nil
}

func (w *watch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func measure(ctx context.Context, stderr io.Writer, o options, loadgen string, p *harness.Process, url, admin, target string, n int, mode string) row {
	r := row{target: target, n: n, mode: mode}
	fmt.Fprintf(stderr, "  %s, %d subscribers, %s\n", target, n, mode)
	ctx, cancel := context.WithTimeout(ctx, o.duration+5*time.Minute)
	defer cancel()
	args := []string{"broadcast", "-url", url, "-admin", admin, "-subscribers", strconv.Itoa(n), "-sources", o.sources,
		"-duration", o.duration.String(), "-timeout", o.timeout.String(), "-json", "-"}
	if mode == "push" {
		args = append(args, "-push")
	} else {
		args = append(args, "-senders", strconv.Itoa(o.senders), "-rate", strconv.Itoa(o.rate))
	}
	cmd := exec.CommandContext(ctx, loadgen, args...)
	began := time.Now()
	var (
		window sync.WaitGroup
		cpuErr error
	)
	window.Add(1)
	w := &watch{began: func() {
		defer window.Done()
		r.accept = time.Since(began)
		before, err := benchrun.ProcCPUSeconds(p.PID())
		if err != nil {
			cpuErr = err
			return
		}
		select {
		case <-time.After(o.duration):
		case <-ctx.Done():
			cpuErr = ctx.Err()
			return
		}
		after, err := benchrun.ProcCPUSeconds(p.PID())
		r.cpu, cpuErr = after-before, err
	}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, w
	err := harness.LoadgenRan(cmd.Run(), out.Bytes())
	w.mu.Lock()
	seen := w.seen
	w.mu.Unlock()
	if seen {
		window.Wait()
	}
	if err != nil {
		r.err = fmt.Errorf("loadgen: %v: %s", err, benchrun.LastLine(w.String()))
		return r
	}
	var rep broadcast.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		r.err = fmt.Errorf("loadgen output: %v", err)
		return r
	}
	r.rep = &rep
	if cpuErr != nil {
		r.err = fmt.Errorf("server CPU: %v", cpuErr)
	}
	return r
}

// ratio is a/b with the goal beside it: "0.84 (goal <= 1.5: met)".
func ratio(a, b, goal float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	x := a / b
	s := strconv.FormatFloat(x, 'f', 2, 64)
	if goal <= 0 {
		return s
	}
	met := "met"
	if x > goal {
		met = "**not met**"
	}
	return fmt.Sprintf("%s (<= %s: %s)", s, strconv.FormatFloat(goal, 'f', -1, 64), met)
}

func find(rows []row, target string, n int, mode string) *row {
	for i := range rows {
		if rows[i].target == target && rows[i].n == n && rows[i].mode == mode && rows[i].rep != nil {
			return &rows[i]
		}
	}
	return nil
}

// writeTables writes the push table, the accept comparison and the
// broadcast-mode table.
func writeTables(w io.Writer, o options, rows []row) {
	fmt.Fprintf(w, "\nTimed push (every 100 ms, 100-byte payload) to every subscriber, loadgen broadcast -push, %s windows. CPU: the server process's user+system time over the window (/proc/PID/stat) per delivery received in it. Accept: loadgen's start to every join echo answered (-join-timeout %s). Ratios: to the floor (%s) and to Node's `ws` (%s) at the same count, same run, goal beside.\n\n",
		o.duration, o.timeout, floorTarget, nodeTarget)
	fmt.Fprintln(w, "| target | subscribers | joined | accept s | deliveries | lost | CPU µs/delivery | x floor | x Node | p50 ms | p99 ms | p50 x Node | p99 x Node | p99 goal ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---|")
	for _, r := range rows {
		if r.mode == "push" {
			writePushRow(w, o, rows, r)
		}
	}
	writeAccepts(w, o, rows)
	writeBroadcastTable(w, o, rows)
}

// writePushRow is r's line of the push table, with its ratios to the floor
// and to Node from rows.
func writePushRow(w io.Writer, o options, rows []row, r row) {
	if r.rep == nil {
		fmt.Fprintf(w, "| %s | %d | error: %v | | | | | | | | | | | |\n", r.target, r.n, r.err)
		return
	}
	rep := r.rep
	joined := strconv.Itoa(rep.Connected)
	if rep.Connected < r.n {
		joined = fmt.Sprintf("**%d of %d** within %s", rep.Connected, r.n, o.timeout)
	}
	lost := strconv.FormatUint(rep.Lost, 10)
	if rep.Lost > 0 {
		lost = "**" + lost + "**"
	}
	us := r.usPerDelivery()
	usCell := "-"
	if us > 0 {
		usCell = strconv.FormatFloat(us, 'f', 1, 64)
	}
	if r.err != nil {
		usCell += " (" + r.err.Error() + ")"
	}
	p50, p99 := 0.0, 0.0
	if rep.Latency != nil {
		p50, p99 = rep.Latency.P50*1000, rep.Latency.P99*1000
	}
	xFloor, p99Goal := "-", "-"
	if isKnowngood(r.target) {
		goals, ok := goalsOf(libraryOf(r.target))
		if f := find(rows, floorTarget, r.n, "push"); f != nil {
			xFloor = ratio(us, f.usPerDelivery(), goals.DeliveryCPU)
		}
		if g := goals.PushP99ms; ok && r.n == goalSubscribers && rep.Latency != nil {
			p99Goal = fmt.Sprintf("%.0f: met", g)
			if p99 > g {
				p99Goal = fmt.Sprintf("%.0f: **not met**", g)
			}
		}
	}
	xNode, p50Node, p99Node := nodeRatios(rows, r, us, p50, p99)
	fmt.Fprintf(w, "| %s | %d | %s | %.1f | %d | %s | %s | %s | %s | %.1f | %.1f | %s | %s | %s |\n",
		r.target, r.n, joined, r.accept.Seconds(), rep.Received, lost, usCell, xFloor, xNode, p50, p99, p50Node, p99Node, p99Goal)
}

// nodeRatios are r's CPU per delivery (us) and latencies (ms) over Node's
// at the same count, "-" where there is no Node row to compare with.
func nodeRatios(rows []row, r row, us, p50, p99 float64) (cpu, p50Node, p99Node string) {
	cpu, p50Node, p99Node = "-", "-", "-"
	if r.target == nodeTarget {
		return
	}
	nd := find(rows, nodeTarget, r.n, "push")
	if nd == nil {
		return
	}
	goal := 0.0
	if isKnowngood(r.target) {
		goal = nodeGoal
	}
	cpu = ratio(us, nd.usPerDelivery(), goal)
	if nl := nd.rep.Latency; nl != nil && r.rep.Latency != nil {
		p50Node, p99Node = ratio(p50, nl.P50*1000, 0), ratio(p99, nl.P99*1000, 0)
	}
	if nd.rep.Connected < r.n {
		cpu += " (Node took fewer)"
	}
	return cpu, p50Node, p99Node
}

// writeAccepts compares the time gnet and gorilla took to accept each
// count of subscribers.
func writeAccepts(w io.Writer, o options, rows []row) {
	gnetName, gorillaName := broadcastOn(variants.Gnet), broadcastOn(variants.Gorilla)
	for _, n := range o.subscribers {
		g, gr := find(rows, gnetName, n, "push"), find(rows, gorillaName, n, "push")
		if g != nil && gr != nil {
			fmt.Fprintf(w, "\nAccepting %d subscribers: %s %.1f s, %s %.1f s: gnet/gorilla %s.\n",
				n, gnetName, g.accept.Seconds(), gorillaName, gr.accept.Seconds(), ratio(g.accept.Seconds(), gr.accept.Seconds(), 1))
		}
	}
}

// broadcastOn is the broadcast variant built on lib.
func broadcastOn(lib variants.Library) string {
	vs := variants.Where(variants.InFamily(variants.Broadcast), variants.Is(lib))
	if len(vs) == 0 {
		return ""
	}
	return vs[0].Name
}

// writeBroadcastTable is the broadcast-mode table, when any row ran it.
func writeBroadcastTable(w io.Writer, o options, rows []row) {
	var bc []row
	for _, r := range rows {
		if r.mode == "broadcast" {
			bc = append(bc, r)
		}
	}
	if len(bc) == 0 {
		return
	}
	fmt.Fprintf(w, "\nBroadcast mode (knowngood targets only: the floor and Node only push): %d senders, %d broadcasts/s in total, each to every subscriber and sender, %s windows; the timed push goes on, and its deliveries count in the CPU per delivery.\n\n", o.senders, o.rate, o.duration)
	fmt.Fprintln(w, "| target | members | deliveries | lost | dups | CPU µs/delivery | p50 ms | p99 ms | max ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range bc {
		if r.rep == nil {
			fmt.Fprintf(w, "| %s | %d | error: %v | | | | | | |\n", r.target, r.n, r.err)
			continue
		}
		rep := r.rep
		p50, p99, mx := 0.0, 0.0, 0.0
		if l := rep.Latency; l != nil {
			p50, p99, mx = l.P50*1000, l.P99*1000, l.Max*1000
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f |\n",
			r.target, rep.Connected, rep.Received, rep.Lost, rep.Duplicates, r.usPerDelivery(), p50, p99, mx)
	}
}

// libraryOf is the library of a variant that Pick has checked.
func libraryOf(name string) variants.Library {
	v, _ := variants.Lookup(name)
	return v.Library
}

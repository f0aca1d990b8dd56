// Command echo is the echo benchmark (make bench-echo): in one run, it
// measures every echo target in turn (echo-tcp and one per WebSocket
// library, each Go one also with -metrics=false, and the Node `ws` echo
// server of scripts/node/ws-echo-server.mjs) with `loadgen echo`, for each
// connection count and mode, a few times over, and prints the medians as
// Markdown tables: rates, latencies and both sides' CPU seconds, the ratios
// to echo-tcp and to Node `ws`, the cost of the instrumentation (metrics on
// against off), and the project's goals for them.
//
//	go run ./scripts/bench/echo [-duration 5s] [-warmup 1s] [-reps 3] [-conns 1,100] [-modes sync,pipelined]
//	                            [-variants echo-tcp,echo-gorilla,echo-coder,echo-gnet,echo-nbio,gorilla-floor,coder-floor,gnet-floor,nbio-floor,node] [-metrics-off=true]
//
// gorilla-floor, coder-floor, gnet-floor and nbio-floor are the minimal
// WebSocket echo servers on each library alone
// (scripts/bench/floors/LIBecho): a target's server CPU per message is set
// beside its library's floor, and held to the registry's Goals.CPUOfFloor
// where it has one (echo-gnet's).
//
// Every repetition starts a fresh server for each target, and the targets
// take turns within a repetition, so that a slow minute of the machine
// falls on all of them rather than on one. The client and the server share
// the machine's cores: the ratios, measured in the same run, are the
// figures to compare across machines, not the rates. Run it from the
// repository root; everything listens on 127.0.0.1, and every process it
// starts is stopped before it returns.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/knowngood/knowngood/loadgen/echo"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/servers/variants"
)

const node = benchrun.Node

var goVariants = benchrun.EchoVariants

type options struct {
	duration, warmup time.Duration
	reps             int
	conns            []int
	modes            []string
	variants         []string // goVariants and node, in the order given
	metricsOff       bool
	size, inflight   int
}

func main() { benchrun.Main("bench-echo", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-echo", flag.ContinueOnError)
	duration := fs.Duration("duration", 5*time.Second, "loadgen -duration: the measured window of each run")
	warmup := fs.Duration("warmup", time.Second, "loadgen -warmup")
	reps := fs.Int("reps", 3, "repetitions; the tables give medians")
	conns := fs.String("conns", "1,100", "comma-separated `list` of connection counts")
	modes := fs.String("modes", "sync,pipelined", "comma-separated `list` of loadgen modes (sync, pipelined, rate)")
	variants := benchrun.EchoTargetsFlag(fs)
	metricsOff := fs.Bool("metrics-off", true, "also measure each Go target with -metrics=false (the instrumentation's cost)")
	size := fs.Int("size", 128, "loadgen -size")
	inflight := fs.Int("inflight", 32, "loadgen -inflight (pipelined)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{duration: *duration, warmup: *warmup, reps: *reps, metricsOff: *metricsOff, size: *size, inflight: *inflight}
	if o.duration <= 0 || o.warmup < 0 {
		return options{}, errors.New("invalid -duration or -warmup: want a positive window and a warmup of 0 or more")
	}
	if o.reps < 1 {
		return options{}, fmt.Errorf("invalid value %d for flag -reps: want 1 or more", o.reps)
	}
	var err error
	if o.conns, err = benchrun.Counts("conns", *conns); err != nil {
		return options{}, err
	}
	if o.modes, err = benchrun.Pick("modes", *modes, echo.Modes); err != nil {
		return options{}, err
	}
	if o.variants, err = benchrun.ParseEchoTargets(*variants); err != nil {
		return options{}, err
	}
	return o, nil
}

// target is one server configuration measured.
type target struct {
	variant    string // a Go variant, or node
	metricsOff bool
}

func (t target) String() string {
	switch {
	case t.variant == node:
		return "node ws"
	case t.metricsOff:
		return t.variant + " -metrics=false"
	}
	return t.variant
}

func (o options) targets() []target {
	var out []target
	for _, v := range o.variants {
		out = append(out, target{variant: v})
	}
	if o.metricsOff {
		for _, v := range o.variants {
			if !benchrun.Foreign(v) {
				out = append(out, target{variant: v, metricsOff: true})
			}
		}
	}
	return out
}

// cell is one line of the tables: a target at one connection count and
// mode.
type cell struct {
	target target
	conns  int
	mode   string
}

// result is one run.
type result struct {
	rep       *echo.Report
	serverCPU float64 // over the window, from /proc (-pid)
	err       error
}

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	machine := benchrun.StartMachine()
	results := map[cell][]result{}
	for rep := 1; rep <= o.reps; rep++ {
		for _, t := range o.targets() {
			fmt.Fprintf(stderr, "repetition %d of %d: %s\n", rep, o.reps, t)
			p, url, admin, err := startTarget(ctx, stderr, t)
			if err != nil {
				return err
			}
			for _, c := range o.conns {
				for _, mode := range o.modes {
					k := cell{t, c, mode}
					results[k] = append(results[k], measure(ctx, stderr, o, bins.Loadgen, k, url, admin, p.PID()))
				}
			}
			p.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	writeTables(stdout, o, results)
	fmt.Fprintf(stdout, "\n%s\n", machine.Summary())
	return nil
}

// startTarget starts a fresh server for t and returns the URL that loadgen
// uses and its admin address ("" for none).
func startTarget(ctx context.Context, stderr io.Writer, t target) (*harness.Process, string, string, error) {
	var extra []string
	if t.metricsOff {
		extra = append(extra, "-metrics=false")
	}
	p, url, admin, err := benchrun.StartEchoTarget(ctx, stderr, t.variant, extra...)
	if t.metricsOff {
		admin = "" // its /stats answers 404
	}
	return p, url, admin, err
}

// measure runs loadgen echo once. The server's CPU comes from /proc (-pid)
// for every target alike, metrics on or off, Go or Node.
func measure(ctx context.Context, stderr io.Writer, o options, loadgen string, k cell, url, admin string, pid int) result {
	fmt.Fprintf(stderr, "  C=%d %s\n", k.conns, k.mode)
	ctx, cancel := context.WithTimeout(ctx, o.warmup+o.duration+echo.DefaultTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, loadgen, "echo", "-url", url, "-c", strconv.Itoa(k.conns), "-size", strconv.Itoa(o.size),
		"-mode", k.mode, "-inflight", strconv.Itoa(o.inflight), "-duration", o.duration.String(), "-warmup", o.warmup.String(),
		"-admin", admin, "-pid", strconv.Itoa(pid), "-json", "-")
	rep, err := benchrun.LoadgenReport[echo.Report](cmd)
	if err != nil {
		fmt.Fprintf(stderr, "    %v\n", err)
		return result{err: err}
	}
	r := result{rep: rep}
	if rep.Server == nil || rep.Server.CPUSeconds == nil {
		r.err = fmt.Errorf("no server CPU: %s", rep.ServerError)
		return r
	}
	r.serverCPU = *rep.Server.CPUSeconds
	if n := errorCount(rep); n > 0 {
		fmt.Fprintf(stderr, "    %d errors: %v\n", n, rep.Errors)
	}
	return r
}

func errorCount(rep *echo.Report) int {
	n := 0
	for _, c := range rep.Errors {
		n += c.Count
	}
	return n
}

// summary is the medians of a cell's runs.
type summary struct {
	runs, failed         int
	rate, p50, p99       float64
	serverCPU, clientCPU float64
	serverUsPerMsg       float64 // server CPU µs per message
	clientPerServer      float64 // client CPU / server CPU, per run
	errors               int     // over all runs
	ok                   bool
}

func summarize(rs []result) summary {
	var s summary
	var rate, p50, p99, scpu, ccpu, us, cps []float64
	for _, r := range rs {
		s.runs++
		if r.rep == nil || r.err != nil || r.rep.P50ms == nil {
			s.failed++
			continue
		}
		rate = append(rate, r.rep.MessagesPerSecond)
		p50 = append(p50, *r.rep.P50ms)
		p99 = append(p99, *r.rep.P99ms)
		scpu = append(scpu, r.serverCPU)
		ccpu = append(ccpu, r.rep.ClientCPUSeconds)
		if r.rep.Messages > 0 {
			us = append(us, r.serverCPU/float64(r.rep.Messages)*1e6)
		}
		if r.serverCPU > 0 {
			cps = append(cps, r.rep.ClientCPUSeconds/r.serverCPU)
		}
		s.errors += errorCount(r.rep)
	}
	s.ok = len(rate) > 0
	s.rate, s.p50, s.p99 = benchrun.Median(rate), benchrun.Median(p50), benchrun.Median(p99)
	s.serverCPU, s.clientCPU, s.serverUsPerMsg = benchrun.Median(scpu), benchrun.Median(ccpu), benchrun.Median(us)
	s.clientPerServer = benchrun.Median(cps)
	return s
}

func writeTables(w io.Writer, o options, results map[cell][]result) {
	sums := map[cell]summary{}
	for k, rs := range results {
		sums[k] = summarize(rs)
	}
	ratio := func(k cell, base target) string {
		s, b := sums[k], sums[cell{base, k.conns, k.mode}]
		if !s.ok || !b.ok || b.rate == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", s.rate/b.rate)
	}
	fmt.Fprintf(w, "\nEcho with loadgen: %d-byte messages, pipelined with %d in flight per connection, %s windows after %s of warmup; medians of %d runs. CPU seconds are over the window; server µs/msg is its CPU per message echoed.\n\n",
		o.size, o.inflight, o.duration, o.warmup, o.reps)
	fmt.Fprintln(w, "| target | C | mode | msg/s | p50 ms | p99 ms | server CPU s | client CPU s | server µs/msg | x "+benchrun.EchoFloor+" | x node ws | errors |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range o.conns {
		for _, mode := range o.modes {
			for _, t := range o.targets() {
				k := cell{t, c, mode}
				s := sums[k]
				if !s.ok {
					fmt.Fprintf(w, "| %s | %d | %s | failed (%d of %d runs) | | | | | | | | |\n", t, c, mode, s.failed, s.runs)
					continue
				}
				fmt.Fprintf(w, "| %s | %d | %s | %.0f | %.3f | %.3f | %.2f | %.2f | %.2f | %s | %s | %d |\n",
					t, c, mode, s.rate, s.p50, s.p99, s.serverCPU, s.clientCPU, s.serverUsPerMsg,
					ratio(k, target{variant: benchrun.EchoFloor}), ratio(k, target{variant: node}), s.errors)
			}
		}
	}

	if o.metricsOff {
		fmt.Fprintln(w, "\nInstrumentation cost, metrics on against -metrics=false in the same run (cost = 1 - rate on / rate off; negative = within noise):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| variant | C | mode | msg/s on | msg/s off | cost % | server µs/msg on | off |")
		fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|")
		for _, c := range o.conns {
			for _, mode := range o.modes {
				for _, v := range o.variants {
					if benchrun.Foreign(v) {
						continue
					}
					on, off := sums[cell{target{variant: v}, c, mode}], sums[cell{target{v, true}, c, mode}]
					if !on.ok || !off.ok || off.rate == 0 {
						fmt.Fprintf(w, "| %s | %d | %s | - | - | - | - | - |\n", v, c, mode)
						continue
					}
					fmt.Fprintf(w, "| %s | %d | %s | %.0f | %.0f | %.1f | %.2f | %.2f |\n",
						v, c, mode, on.rate, off.rate, 100*(1-on.rate/off.rate), on.serverUsPerMsg, off.serverUsPerMsg)
				}
			}
		}
	}
	writeGoals(w, o, sums)
}

// writeGoals checks the echo goals, at pipelined C = 100 when it was
// measured.
func writeGoals(w io.Writer, o options, sums map[cell]summary) {
	const c, mode = 100, echo.Pipelined
	if !slices.Contains(o.conns, c) || !slices.Contains(o.modes, mode) {
		return
	}
	rate := func(v string, off bool) (float64, bool) {
		s := sums[cell{target{v, off}, c, mode}]
		return s.rate, s.ok && s.rate > 0
	}
	fmt.Fprintf(w, "\nGoals, pipelined C = %d, medians:\n\n", c)
	fmt.Fprintln(w, "| goal | measured | met |")
	fmt.Fprintln(w, "|---|---:|---|")
	line := func(goal string, a, b float64, okA, okB bool, cmp func(float64) bool, format string) {
		if !okA || !okB {
			fmt.Fprintf(w, "| %s | - | not measured |\n", goal)
			return
		}
		v := a / b
		if format == "cost" {
			v = 100 * (1 - a/b)
			fmt.Fprintf(w, "| %s | %.1f%% | %s |\n", goal, v, benchrun.Met(cmp(v)))
			return
		}
		fmt.Fprintf(w, "| %s | %.2fx | %s |\n", goal, v, benchrun.Met(cmp(v)))
	}
	tcp, okTCP := rate(benchrun.EchoFloor, false)
	nodeRate, okNode := rate(node, false)
	for _, v := range benchrun.WSEchoVariants {
		row, _ := variants.Lookup(v)
		lib, ok := variants.LookupWebSocketLibrary(row.Library)
		least := lib.Goals.EchoOfTCP
		if !ok {
			fmt.Fprintf(w, "| %s >= ?x %s | - | no goal for library %s |\n", v, benchrun.EchoFloor, row.Library)
			continue
		}
		r, ok := rate(v, false)
		line(fmt.Sprintf("%s >= %.1fx %s", v, least, benchrun.EchoFloor), r, tcp, ok, okTCP, func(x float64) bool { return x >= least }, "x")
	}
	for _, v := range benchrun.WSEchoVariants {
		r, ok := rate(v, false)
		line(v+" >= 1.5x node ws", r, nodeRate, ok, okNode, func(x float64) bool { return x >= 1.5 }, "x")
	}
	// The reference client must be the cheapest process on the box: no
	// more CPU than the target it drives (the median of each run's ratio).
	for _, t := range o.targets() {
		if t.metricsOff {
			continue
		}
		s := sums[cell{t, c, mode}]
		line(fmt.Sprintf("loadgen CPU / %s CPU <= 1.0x", t), s.clientPerServer, 1, s.ok && s.clientPerServer > 0, true, func(x float64) bool { return x <= 1 }, "x")
	}
	for _, v := range benchrun.WSEchoVariants {
		row, _ := variants.Lookup(v)
		lib, _ := variants.LookupWebSocketLibrary(row.Library)
		floor := benchrun.FloorOf(lib.Library)
		s, f := sums[cell{target{variant: v}, c, mode}], sums[cell{target{variant: floor}, c, mode}]
		if !lib.Floor || !s.ok || !f.ok {
			continue
		}
		// The server's CPU per message, not its rate: the client shares
		// the cores, and the floor's share of them differs.
		goal := lib.Goals.CPUOfFloor
		if goal == 0 {
			if s.serverUsPerMsg > 0 && f.serverUsPerMsg > 0 {
				fmt.Fprintf(w, "| %s server µs/msg against %s (reported, no goal) | %.2fx | - |\n", v, floor, s.serverUsPerMsg/f.serverUsPerMsg)
			}
			continue
		}
		line(fmt.Sprintf("%s server µs/msg <= %.1fx %s", v, goal, floor), s.serverUsPerMsg, f.serverUsPerMsg,
			s.serverUsPerMsg > 0, f.serverUsPerMsg > 0, func(x float64) bool { return x <= goal }, "x")
	}
	if o.metricsOff {
		for _, v := range goVariants {
			on, okOn := rate(v, false)
			off, okOff := rate(v, true)
			line(v+" instrumentation <= 5%", on, off, okOn, okOff, func(x float64) bool { return x <= 5 }, "cost")
		}
	}
}

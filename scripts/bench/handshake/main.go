// Command handshake is the handshake benchmark (make bench-handshake): for
// each Socket.IO variant (empty, async, blocking) and each N, it starts a
// fresh knowngood server, runs `loadgen handshake` against it, and prints one
// Markdown table of the client's and the server's figures; then the same
// client against the Node socket.io v4 reference server
// (scripts/node/sio-server.mjs) and the bare zishang520 server
// (./bare, the library with nothing of knowngood's), and the ratio of
// handshake rates; and, for each knowngood variant and N, loadgen's CPU over
// the target's (the median of -burst-reps runs) beside the goal that the
// reference client be the cheapest process on the box. Then the sustained comparison (sustained.go): -workers
// clients handshaking over and over against empty, bare zishang520 and
// Node, -reps times, with the rate and the server's CPU per handshake of
// each, and their ratios beside the goals.
//
//	go run ./scripts/bench/handshake [-n 50,100,200,500,2000] [-variants empty,async,blocking]
//	go run ./scripts/bench/handshake -burst=false [-sustained 5s] [-workers 32] [-reps 3] [-profile DIR]
//	go run ./scripts/bench/handshake -variants empty -n 500,1000,2000 -burst-reps 3 -node=false -bare=false -sustained 0 [-compare OLD-LOADGEN]
//
// Run it from the repository root. Everything listens on 127.0.0.1; every
// process it starts is stopped before it returns.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/handshake"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/protocol"
)

type options struct {
	ns        []int
	variants  []string
	deadline  time.Duration
	transport string
	delay     string // the servers' -delay, "" for their default
	model     string // blocking's -blocking-model
	node      bool
	bare      bool
	burst     bool
	// burstReps runs of each knowngood variant and N; compare, when set,
	// is a second loadgen binary measured beside the tree's, alternately.
	burstReps int
	compare   string
	// The sustained comparison: its duration per run (0: none), workers,
	// repetitions, and where to write CPU profiles ("" for none).
	sustained  time.Duration
	workers    int
	reps       int
	profileDir string
}

func main() { benchrun.Main("bench-handshake", parseFlags, run) }

// delayOrDefault is the servers' -delay: the flag's, or knowngood's default.
func (o options) delayOrDefault() time.Duration {
	if d, err := time.ParseDuration(o.delay); err == nil {
		return d
	}
	return config.Default().SocketIO.Delay
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-handshake", flag.ContinueOnError)
	ns := fs.String("n", "50,100,200,500,2000", "comma-separated `list` of connection counts")
	variants := fs.String("variants", strings.Join(benchrun.SocketIOVariants, ","), "comma-separated `list` of Socket.IO variants")
	deadline := fs.Duration("deadline", 15*time.Second, "loadgen -deadline")
	transport := fs.String("transport", "websocket", "loadgen -transport")
	delay := fs.String("delay", "", "the servers' -delay, a duration (default: theirs, 50ms)")
	model := fs.String("blocking-model", protocol.BlockingAsyncio, "blocking's -blocking-model: asyncio or node")
	node := fs.Bool("node", true, "also measure the Node socket.io server (empty only)")
	bare := fs.Bool("bare", true, "also measure the bare zishang520 server (empty only)")
	burst := fs.Bool("burst", true, "measure N handshakes at once with loadgen, for each -n")
	burstReps := fs.Int("burst-reps", 1, "`N` runs of each knowngood variant and -n, each on a fresh server; the CPU ratios are their medians")
	compare := fs.String("compare", "", "`PATH` of another loadgen binary (an older build) to run beside the tree's on every knowngood run, alternately, with its own rows and ratios")
	sustained := fs.Duration("sustained", 5*time.Second, "`DURATION` of each sustained run against empty, bare zishang520 and Node (0: none)")
	workers := fs.Int("workers", 32, "`N` clients of the sustained runs, each handshaking over and over")
	reps := fs.Int("reps", 3, "`N` sustained runs of each target, interleaved")
	profile := fs.String("profile", "", "after the sustained runs, write a CPU and an allocation profile of empty and bare under the same load into `DIR`")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{deadline: *deadline, transport: *transport, delay: *delay, model: *model, node: *node, bare: *bare, burst: *burst,
		burstReps: *burstReps, compare: *compare,
		sustained: *sustained, workers: *workers, reps: *reps, profileDir: *profile}
	switch {
	case o.sustained < 0:
		return options{}, fmt.Errorf("invalid value %s for flag -sustained: want 0 or a positive duration such as 5s", o.sustained)
	case o.workers < 1 || o.workers > 10000:
		return options{}, fmt.Errorf("invalid value %d for flag -workers: want 1 to 10000", o.workers)
	case o.reps < 1 || o.reps > 100:
		return options{}, fmt.Errorf("invalid value %d for flag -reps: want 1 to 100", o.reps)
	case o.burstReps < 1 || o.burstReps > 100:
		return options{}, fmt.Errorf("invalid value %d for flag -burst-reps: want 1 to 100", o.burstReps)
	case o.model != protocol.BlockingAsyncio && o.model != protocol.BlockingNode:
		return options{}, fmt.Errorf("invalid value %q for flag -blocking-model: want asyncio or node", o.model)
	}
	if _, err := time.ParseDuration(o.delay); o.delay != "" && err != nil {
		return options{}, fmt.Errorf("invalid value %q for flag -delay: want a duration such as 50ms", o.delay)
	}
	var err error
	if o.ns, err = benchrun.Counts("n", *ns); err != nil {
		return options{}, err
	}
	for _, v := range strings.Split(*variants, ",") {
		if v = strings.TrimSpace(v); v != "" {
			o.variants = append(o.variants, v)
		}
	}
	if len(o.variants) == 0 {
		return options{}, errors.New("invalid value for flag -variants: want at least one variant")
	}
	return o, nil
}

// row is one measurement.
type row struct {
	variant string
	client  string // loadgen, or -compare's binary
	n       int
	rep     *handshake.Report
	// serverCPU is the server's CPU seconds over the run: from /stats when
	// it has cpu_seconds, else from /proc.
	serverCPU *float64
	err       error
}

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	machine := benchrun.StartMachine()
	if o.burst {
		if err := runBurst(ctx, o, bins.Loadgen, stdout, stderr); err != nil {
			return err
		}
	}
	if o.sustained > 0 {
		if err := runSustained(ctx, o, stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\n%s\n", machine.Summary())
	return ctx.Err()
}

// runBurst is the table of N handshakes at once, for each N.
func runBurst(ctx context.Context, o options, loadgen string, stdout, stderr io.Writer) error {

	// A fresh server for every run: on blocking, the connects a short
	// deadline gave up on still hold the loop after the run.
	clients := []string{loadgen}
	if o.compare != "" {
		clients = append(clients, o.compare)
	}
	var rows []row
	for _, variant := range o.variants {
		for _, n := range o.ns {
			for range o.burstReps {
				for _, client := range clients {
					args := []string{"-variant", variant}
					if variant == benchrun.SharedLoop {
						args = append(args, "-blocking-model", o.model)
					}
					if o.delay != "" {
						args = append(args, "-delay", o.delay)
					}
					p, err := benchrun.Start(ctx, stderr, nil, args...)
					if err != nil {
						return err
					}
					r := measure(ctx, stderr, o, client, variant, n, p, p.AdminURL())
					r.client = clientName(client, loadgen)
					rows = append(rows, r)
					p.Stop()
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
			}
		}
	}

	if o.bare {
		p, err := benchrun.StartSioFloor(ctx, stderr)
		if err != nil {
			return err
		}
		for _, n := range o.ns {
			rows = append(rows, measure(ctx, stderr, o, loadgen, bareName, n, p, ""))
		}
		p.Stop()
	}

	var nodeRows []row
	if o.node {
		p, err := benchrun.StartNode(ctx, stderr, "sio-server.mjs", "node socket.io")
		if err != nil {
			return err
		}
		for _, n := range o.ns {
			nodeRows = append(nodeRows, measure(ctx, stderr, o, loadgen, "node socket.io (empty)", n, p, ""))
		}
		p.Stop()
	}

	writeTable(stdout, o, append(rows, nodeRows...))
	if len(nodeRows) > 0 {
		writeRatios(stdout, rows, nodeRows)
	}
	writeClientCPU(stdout, o, rows)
	return ctx.Err()
}

// clientName is how the tables name a loadgen binary: "loadgen" for the
// tree's, the path of -compare's.
func clientName(bin, loadgen string) string {
	if bin == loadgen {
		return "loadgen"
	}
	return bin
}

// goalClientCPU: loadgen's CPU over the target's, at most, in a burst of
// handshakes. The reference client must be the cheapest process on the
// box, or the figures measure the client.
const goalClientCPU = 1.0

// writeClientCPU prints, for each client, knowngood variant and N, the
// medians of the runs' client CPU, server CPU, their ratio (each run's,
// then the median) and handshake rate, against goalClientCPU. Both CPU
// figures cover the same window: loadgen's over its load (connect, echo,
// close), the server's between the /stats reads around it.
func writeClientCPU(w io.Writer, o options, rows []row) {
	type key struct {
		client, variant string
		n               int
	}
	type cell struct{ client, server, ratio, rate []float64 }
	var keys []key
	cells := map[key]*cell{}
	for _, r := range rows {
		if r.client == "" || r.rep == nil || r.serverCPU == nil || *r.serverCPU <= 0 {
			continue
		}
		k := key{r.client, r.variant, r.n}
		c := cells[k]
		if c == nil {
			c = &cell{}
			cells[k] = c
			keys = append(keys, k)
		}
		c.client = append(c.client, r.rep.ClientCPUSeconds)
		c.server = append(c.server, *r.serverCPU)
		c.ratio = append(c.ratio, r.rep.ClientCPUSeconds / *r.serverCPU)
		c.rate = append(c.rate, r.rep.HandshakesPerSecond)
	}
	if len(keys) == 0 {
		return
	}
	fmt.Fprintf(w, "\nClient CPU / target CPU, medians of %d runs (goal: loadgen <= %.1fx the target):\n\n", o.burstReps, goalClientCPU)
	fmt.Fprintln(w, "| client | variant | N | runs | handshakes/s | client CPU s | server CPU s | client / server | met |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---|")
	for _, k := range keys {
		c := cells[k]
		ratio := benchrun.Median(c.ratio)
		met := benchrun.Met(ratio <= goalClientCPU)
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.0f | %.3f | %.3f | %.2fx | %s |\n", k.client, k.variant, k.n, len(c.ratio),
			benchrun.Median(c.rate), benchrun.Median(c.client), benchrun.Median(c.server), ratio, met)
	}
}

// measure runs loadgen once against a running server.
func measure(ctx context.Context, stderr io.Writer, o options, loadgen, variant string, n int, p *harness.Process, admin string) row {
	r := row{variant: variant, n: n}
	fmt.Fprintf(stderr, "%s, N=%d\n", variant, n)
	ctx, cancel := context.WithTimeout(ctx, 2*o.deadline+30*time.Second)
	defer cancel()
	cpu0, err0 := procfs.CPUSeconds(p.PID())
	cmd := exec.CommandContext(ctx, loadgen, "handshake", "-url", "http://"+p.Addr, "-n", strconv.Itoa(n),
		"-deadline", o.deadline.String(), "-transport", o.transport, "-admin", admin, "-json", "-")
	rep, err := benchrun.LoadgenReport[handshake.Report](cmd)
	cpu1, err1 := procfs.CPUSeconds(p.PID())
	if err != nil {
		r.err = err
		fmt.Fprintf(stderr, "  %v\n", r.err)
		return r
	}
	r.rep = rep
	switch {
	case rep.Server != nil && rep.Server.CPUSeconds != nil:
		r.serverCPU = rep.Server.CPUSeconds
	case err0 == nil && err1 == nil:
		d := cpu1 - cpu0
		r.serverCPU = &d
	}
	if rep.ServerError != "" && admin != "" {
		fmt.Fprintf(stderr, "  %s\n", rep.ServerError)
	}
	return r
}

func writeTable(w io.Writer, o options, rows []row) {
	fmt.Fprintf(w, "\nHandshakes with loadgen (%s, deadline %s), one fresh server per run:\n\n", o.transport, o.deadline)
	fmt.Fprintln(w, "| variant | N | success % | predicted % | handshakes/s | client p50 ms | client p99 ms | server p50 ms | server p99 ms | server CPU s | client CPU s |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		name := r.variant
		if r.client != "" && r.client != "loadgen" {
			name += " (" + r.client + ")"
		}
		if r.rep == nil {
			fmt.Fprintf(w, "| %s | %d | error: %v | | | | | | | | |\n", name, r.n, r.err)
			continue
		}
		// The blocking curve servers/README.md promises for the model run.
		predicted := "100.0"
		if r.variant == benchrun.SharedLoop {
			predicted = fmt.Sprintf("%.1f", 100*protocol.BlockingSuccess(o.model, r.n, o.delayOrDefault(), o.deadline))
		}
		rep := r.rep
		var sp50, sp99 *float64
		if rep.Server != nil {
			sp50, sp99 = rep.Server.P50ms, rep.Server.P99ms
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %s | %.0f | %s | %s | %s | %s | %s | %.2f |\n",
			name, r.n, 100*float64(rep.Connected)/float64(rep.Attempts), predicted, rep.HandshakesPerSecond,
			benchrun.Num(rep.P50ms, 1), benchrun.Num(rep.P99ms, 1), benchrun.Num(sp50, 1), benchrun.Num(sp99, 1), benchrun.Num(r.serverCPU, 2), rep.ClientCPUSeconds)
	}
}

// writeRatios prints, for each N, the handshake rate of knowngood empty over
// that of Node socket.io.
func writeRatios(w io.Writer, rows, nodeRows []row) {
	empty := map[int]*handshake.Report{}
	for _, r := range rows {
		if r.variant == benchrun.SioBaseline && r.rep != nil {
			empty[r.n] = r.rep
		}
	}
	fmt.Fprintln(w, "\nHandshake rate, knowngood empty / Node socket.io (same client):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| N | knowngood empty /s | node /s | ratio |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	for _, r := range nodeRows {
		kg := empty[r.n]
		if kg == nil || r.rep == nil || r.rep.HandshakesPerSecond == 0 {
			fmt.Fprintf(w, "| %d | - | - | - |\n", r.n)
			continue
		}
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.2f |\n", r.n, kg.HandshakesPerSecond, r.rep.HandshakesPerSecond, kg.HandshakesPerSecond/r.rep.HandshakesPerSecond)
	}
}

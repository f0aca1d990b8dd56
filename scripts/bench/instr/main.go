// Command instr measures what the instrumentation costs each echo target
// (make bench-instr), in instructions rather than seconds: the same binary
// run twice on this 2-core machine differs by 10-16% in msg/s, more than
// the 5% the instrumentation may cost, but the instructions a
// message takes do not depend on what else the machine is doing.
//
// Each target runs under valgrind's callgrind, once with its metrics and
// once with -metrics=false, and `loadgen echo` (native, outside valgrind)
// drives it: callgrind's counters are zeroed just before loadgen starts and
// dumped just after it ends, and the instructions of the target's threads
// in between are divided by the messages loadgen sent, every one of them
// echoed. loadgen reads no /stats, which would count too.
//
//	go run ./scripts/bench/instr [-duration 5s] [-reps 3] [-conns 1,100] [-modes sync,pipelined]
//	                             [-variants echo-tcp,echo-gorilla,echo-coder,echo-gnet,echo-nbio]
//
// callgrind counts user-space instructions: the system calls, the same
// with and without metrics, are left out, so the cost it reports is a
// share of the target's own code, larger than its share of the whole CPU
// time. What instructions do not show is time lost to contention between
// cores on the shared counters. Run it from the repository root; it needs
// valgrind (Debian's package); everything listens on 127.0.0.1, and every
// process it starts is stopped before it returns.
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
	"time"

	"github.com/knowngood/knowngood/loadgen/echo"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

// goal is the bound on the instrumentation's cost, in percent.
const goal = 5

type options struct {
	duration time.Duration
	reps     int
	conns    []int
	modes    []string
	variants []string
	size     int
	inflight int
}

func main() { benchrun.Main("bench-instr", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-instr", flag.ContinueOnError)
	duration := fs.Duration("duration", 5*time.Second, "loadgen -duration of each run (no warmup: every message counts)")
	reps := fs.Int("reps", 3, "repetitions; the table gives medians and the spread of the cost")
	conns := fs.String("conns", "1,100", "comma-separated `list` of connection counts")
	modes := fs.String("modes", "sync,pipelined", "comma-separated `list` of loadgen modes (sync, pipelined)")
	variants := fs.String("variants", strings.Join(benchrun.EchoVariants, ","), "comma-separated `list` of targets: "+strings.Join(benchrun.EchoVariants, ", "))
	size := fs.Int("size", 128, "loadgen -size")
	inflight := fs.Int("inflight", 32, "loadgen -inflight (pipelined)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{duration: *duration, reps: *reps, size: *size, inflight: *inflight}
	if o.duration <= 0 {
		return options{}, fmt.Errorf("invalid value %s for flag -duration: want a positive duration such as 5s", o.duration)
	}
	if o.reps < 1 {
		return options{}, fmt.Errorf("invalid value %d for flag -reps: want 1 or more", o.reps)
	}
	var err error
	if o.conns, err = benchrun.Counts("conns", *conns); err != nil {
		return options{}, err
	}
	if o.modes, err = benchrun.Pick("modes", *modes, []string{echo.Sync, echo.Pipelined}); err != nil {
		return options{}, err
	}
	if o.variants, err = benchrun.Pick("variants", *variants, benchrun.EchoVariants); err != nil {
		return options{}, err
	}
	return o, nil
}

// cell is one line of the table.
type cell struct {
	variant string
	conns   int
	mode    string
}

// perMessage are the instructions per message of a cell's runs, with
// metrics and without.
type perMessage struct{ on, off []float64 }

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	for _, tool := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: it comes with valgrind (apt-get install valgrind)", tool)
		}
	}
	dir, err := os.MkdirTemp("", "knowngood-instr")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	results := map[cell]*perMessage{}
	for rep := 1; rep <= o.reps; rep++ {
		for _, v := range o.variants {
			for _, off := range []bool{false, true} {
				fmt.Fprintf(stderr, "repetition %d of %d: %s%s under callgrind\n", rep, o.reps, v, map[bool]string{true: " -metrics=false"}[off])
				err := measureTarget(ctx, stderr, o, bins, dir, v, off, func(k cell, ir float64) {
					r := results[k]
					if r == nil {
						r = &perMessage{}
						results[k] = r
					}
					if off {
						r.off = append(r.off, ir)
					} else {
						r.on = append(r.on, ir)
					}
				})
				if err != nil {
					return err
				}
			}
		}
	}
	writeTable(stdout, o, results)
	writeGoal(stdout, o, results)
	return nil
}

// measureTarget starts v under callgrind and measures every connection
// count and mode on it, handing each result to add.
func measureTarget(ctx context.Context, stderr io.Writer, o options, bins *benchrun.Binaries, dir, v string, off bool, add func(cell, float64)) error {
	var extra []string
	if off {
		extra = append(extra, "-metrics=false")
	}
	// Go's asynchronous preemption signals trip callgrind's signal
	// handling (an assertion in threads.c); the goroutines still yield at
	// every function call.
	wrapper := []string{"env", "GODEBUG=asyncpreemptoff=1", "valgrind", "--tool=callgrind",
		"--callgrind-out-file=" + filepath.Join(dir, "callgrind.out.%p")}
	p, url, _, err := benchrun.StartEchoTargetUnder(ctx, stderr, wrapper, v, extra...)
	if err != nil {
		return err
	}
	defer p.Stop()
	for _, c := range o.conns {
		for _, mode := range o.modes {
			k := cell{v, c, mode}
			ir, err := measure(ctx, stderr, o, bins.Loadgen, dir, p.PID(), k, url)
			if err != nil {
				fmt.Fprintf(stderr, "    %v\n", err)
				continue
			}
			add(k, ir)
		}
	}
	return ctx.Err()
}

// measure runs loadgen echo once between a zeroing and a dump of the
// target's counters, and returns its instructions per message.
func measure(ctx context.Context, stderr io.Writer, o options, loadgen, dir string, pid int, k cell, url string) (float64, error) {
	fmt.Fprintf(stderr, "  C=%d %s\n", k.conns, k.mode)
	if err := control(ctx, "--zero", pid); err != nil {
		return 0, err
	}
	lctx, cancel := context.WithTimeout(ctx, o.duration+echo.DefaultTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(lctx, loadgen, "echo", "-url", url, "-c", strconv.Itoa(k.conns), "-size", strconv.Itoa(o.size),
		"-mode", k.mode, "-inflight", strconv.Itoa(o.inflight), "-duration", o.duration.String(), "-warmup", "0s",
		"-admin", "", "-json", "-")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := harness.LoadgenRan(cmd.Run(), out.Bytes())
	before, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("callgrind.out.%d.*", pid)))
	if err := control(ctx, "--dump", pid); err != nil {
		return 0, err
	}
	if runErr != nil {
		return 0, fmt.Errorf("loadgen: %v: %s", runErr, benchrun.LastLine(errOut.String()))
	}
	var rep echo.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return 0, fmt.Errorf("loadgen output: %v", err)
	}
	for kind, c := range rep.Errors {
		if c.Count > 0 {
			return 0, fmt.Errorf("loadgen: %d %s errors: the run does not count", c.Count, kind)
		}
	}
	if rep.Sent == 0 {
		return 0, errors.New("loadgen sent nothing")
	}
	ir, err := dumped(ctx, dir, pid, len(before)+1)
	if err != nil {
		return 0, err
	}
	return float64(ir) / float64(rep.Sent), nil
}

// control sends callgrind_control a command for the target's process.
func control(ctx context.Context, command string, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "callgrind_control", command, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("callgrind_control %s %d: %v: %s", command, pid, err, benchrun.LastLine(string(out)))
	}
	return nil
}

// dumped waits for the n-th dump of pid's counters and returns the
// instructions it counted.
func dumped(ctx context.Context, dir string, pid, n int) (int64, error) {
	file := filepath.Join(dir, fmt.Sprintf("callgrind.out.%d.%d", pid, n))
	deadline := time.Now().Add(30 * time.Second)
	for {
		ir, err := summary(file)
		if err == nil {
			return ir, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("callgrind's dump %s: %v", file, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// summary reads the total of a callgrind dump, its "summary:" line (events
// Ir, the only one collected).
func summary(file string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "summary:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				break
			}
			return strconv.ParseInt(fields[0], 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no summary line (yet)")
}

func writeTable(w io.Writer, o options, results map[cell]*perMessage) {
	fmt.Fprintf(w, "\nInstructions per echoed message (callgrind, user space, every thread of the target), %d-byte messages, pipelined with %d in flight per connection, %s runs; medians of %d runs. Cost = instructions with metrics / without - 1; its range is over the runs, each with metrics against each without.\n\n",
		o.size, o.inflight, o.duration, o.reps)
	fmt.Fprintln(w, "| target | C | mode | instructions/msg with metrics | -metrics=false | cost % | cost range % | goal % | met |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---|---:|---|")
	for _, v := range o.variants {
		for _, c := range o.conns {
			for _, mode := range o.modes {
				r := results[cell{v, c, mode}]
				if r == nil || len(r.on) == 0 || len(r.off) == 0 {
					fmt.Fprintf(w, "| %s | %d | %s | - | - | - | - | %d | not measured |\n", v, c, mode, goal)
					continue
				}
				on, off := benchrun.Median(r.on), benchrun.Median(r.off)
				lo, hi := costRange(r)
				cost := 100 * (on/off - 1)
				fmt.Fprintf(w, "| %s | %d | %s | %.0f | %.0f | %.1f | %.1f to %.1f | %d | %s |\n",
					v, c, mode, on, off, cost, lo, hi, goal, benchrun.Met(cost <= goal))
			}
		}
	}
}

// writeGoal checks the goal where bench-echo states it, pipelined
// C = 100: met when every run with metrics is within 5% of every run
// without.
func writeGoal(w io.Writer, o options, results map[cell]*perMessage) {
	const c, mode = 100, echo.Pipelined
	if !slices.Contains(o.conns, c) || !slices.Contains(o.modes, mode) {
		return
	}
	fmt.Fprintf(w, "\nGoal, instrumentation <= %d%% at %s C = %d, in every pair of runs:\n\n", goal, mode, c)
	fmt.Fprintln(w, "| goal | cost range % | met |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, v := range o.variants {
		r := results[cell{v, c, mode}]
		if r == nil || len(r.on) == 0 || len(r.off) == 0 {
			fmt.Fprintf(w, "| %s instrumentation <= %d%% | - | not measured |\n", v, goal)
			continue
		}
		lo, hi := costRange(r)
		fmt.Fprintf(w, "| %s instrumentation <= %d%% | %.1f to %.1f | %s |\n", v, goal, lo, hi, benchrun.Met(hi <= goal))
	}
}

// costRange is the lowest and highest cost, in percent, of any run with
// metrics against any run without.
func costRange(r *perMessage) (lo, hi float64) {
	lo, hi = 1e9, -1e9
	for _, on := range r.on {
		for _, off := range r.off {
			c := 100 * (on/off - 1)
			lo, hi = min(lo, c), max(hi, c)
		}
	}
	return lo, hi
}

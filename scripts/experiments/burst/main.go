// Command burst is the listen-backlog experiment (make experiment-burst):
// a published report's connect burst rerun against a knowngood target. The
// report: a uSockets HTTP server's listen() backlog, hard-coded at 512,
// raised to 16,384 with net.core.somaxconn raised to match; a Go client
// opened C connections at once, each with one request, and measured the
// requests a second, the mean and the p99 (C = 5,000 to 10,000, 100 %
// success each), waiting 60 s between runs for TIME_WAIT to clear.
//
// For each backlog, shape and C it starts a fresh target with -backlog B,
// keeps it busy with steady open-loop echo traffic over a few connections
// (loadgen echo -mode rate: the report's server was serving requests; an
// idle Go accept loop drains a queue faster than one client fills it),
// sends C connects at once with loadgen conns, and reads the kernel's
// listen-queue counts from the target's /stats before and after. The
// shapes: "echo", a WebSocket upgrade and one -echo message back; "get",
// one plain HTTP GET per TCP connection (the report's own; a knowngood
// WebSocket target answers it 426 on the same listener).
//
// It prints net.core.somaxconn, what caps each backlog, and one Markdown
// table (also to -out): per shape, C and backlog the connects a second,
// mean, p50, p99, max and success beside the report's figures, the
// kernel's overflows and drops, and loadgen's verdict.
//
//	go run ./scripts/experiments/burst [-short] [-variant echo-gorilla] [-backlogs 512,16384] [-c 5000,6000,8000,10000] [-shapes echo,get] [-echo 128] [-rate 20000] [-rate-conns 8] [-timeout 15s] [-time-wait 60s] [-out FILE]
//
// Run it from the repository root. Everything listens on 127.0.0.1; every
// run has a fresh target, and every process it starts is stopped before
// it returns.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/servers/variants"
)

// The shapes of a connect.
const (
	shapeEcho = "echo" // a WebSocket upgrade, then one -echo message back
	shapeGet  = "get"  // one plain HTTP GET per TCP connection
)

type options struct {
	variant   string
	backlogs  []int
	cs        []int
	shapes    []string
	echo      int
	rate      int
	rateConns int
	timeout   time.Duration
	timeWait  time.Duration
	out       string
}

func main() { benchrun.Main("experiment-burst", parseFlags, run) }

// maxBacklog is Linux's own bound on a listen backlog (an int, but the
// kernel keeps it in 32 bits and somaxconn is at most this).
const maxBacklog = 1 << 20

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("experiment-burst", flag.ContinueOnError)
	variant := fs.String("variant", "echo-gorilla", "the knowngood WebSocket echo `VARIANT` to run: "+strings.Join(benchrun.WSEchoVariants, ", "))
	backlogs := fs.String("backlogs", "512,16384", "comma-separated `list` of listen backlogs (the target's -backlog; net.core.somaxconn caps each)")
	cs := fs.String("c", "5000,6000,8000,10000", "comma-separated `list` of connects sent at once (the open-files limit applies)")
	shapes := fs.String("shapes", shapeEcho+","+shapeGet, "comma-separated `list` of connect shapes: echo (a WebSocket upgrade and one -echo message back), get (one plain HTTP GET per TCP connection, answered 426 by a WebSocket target)")
	echo := fs.Int("echo", 128, "`BYTES` of the echo shape's one message")
	rate := fs.Int("rate", 20000, "the steady traffic's `MSG/S` (loadgen echo -mode rate) during each burst; 0: none, an idle target")
	rateConns := fs.Int("rate-conns", 8, "the steady traffic's `N` connections")
	timeout := fs.Duration("timeout", 15*time.Second, "each connect's deadline (the SYN retries of a dropped connect come after 1 s, 3 s, 7 s...)")
	timeWait := fs.Duration("time-wait", 60*time.Second, "after each run, wait up to this long for the TIME_WAIT sockets on the target's port to clear, as the report waited (0: do not wait)")
	out := fs.String("out", "", "also write the table to `FILE`")
	short := fs.Bool("short", false, "the small version the test runs, a few seconds a run: -c 300,600 -backlogs 16,4096 -rate 2000 -timeout 5s -time-wait 0 (flags given as well win)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if *short {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, value := range map[string]string{"c": "300,600", "backlogs": "16,4096", "rate": "2000", "timeout": "5s", "time-wait": "0"} {
			if !set[name] {
				_ = fs.Set(name, value)
			}
		}
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o := options{variant: *variant, echo: *echo, rate: *rate, rateConns: *rateConns, timeout: *timeout, timeWait: *timeWait, out: *out}
	var err error
	if o.backlogs, err = benchrun.Counts("backlogs", *backlogs); err != nil {
		return options{}, err
	}
	if o.cs, err = benchrun.Counts("c", *cs); err != nil {
		return options{}, err
	}
	if o.shapes, err = benchrun.Pick("shapes", *shapes, []string{shapeEcho, shapeGet}); err != nil {
		return options{}, err
	}
	v, known := variants.Lookup(o.variant)
	switch {
	case !known || v.Family != variants.Echo || v.Protocol != variants.WebSocket:
		return options{}, fmt.Errorf("invalid value %q for flag -variant: want a WebSocket echo: %s", o.variant, strings.Join(benchrun.WSEchoVariants, ", "))
	case maxOf(o.backlogs) > maxBacklog:
		return options{}, fmt.Errorf("invalid value %q for flag -backlogs: want each at most %d", *backlogs, maxBacklog)
	case maxOf(o.cs) > 1000000:
		return options{}, fmt.Errorf("invalid value %q for flag -c: want each at most 1000000", *cs)
	case o.echo < 1 || o.echo > 1<<20:
		return options{}, fmt.Errorf("invalid value %d for flag -echo: want 1 to 1048576", o.echo)
	case o.rate < 0 || o.rate > 10000000:
		return options{}, fmt.Errorf("invalid value %d for flag -rate: want 0 to 10000000", o.rate)
	case o.rateConns < 1 || o.rateConns > 1000:
		return options{}, fmt.Errorf("invalid value %d for flag -rate-conns: want 1 to 1000", o.rateConns)
	case o.timeout <= 0 || o.timeout > 10*time.Minute:
		return options{}, errors.New("invalid value for flag -timeout: want a positive duration up to 10m")
	case o.timeWait < 0 || o.timeWait > 10*time.Minute:
		return options{}, errors.New("invalid value for flag -time-wait: want 0 to 10m")
	}
	return o, nil
}

func maxOf(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// run measures every backlog, shape and C in turn and prints the table.
func run(ctx context.Context, o options, _ *benchrun.Binaries, stdout, stderr io.Writer) error {
	machine := benchrun.StartMachine()
	somaxconn, err := somaxconnNow()
	if err != nil {
		return err
	}
	rows, err := measureAll(ctx, o, stderr)
	if err != nil {
		return err
	}
	var table strings.Builder
	writeTable(&table, o, somaxconn, rows)
	fmt.Fprintf(&table, "\n%s\n", machine.Summary())
	_, _ = io.WriteString(stdout, table.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(table.String()), 0o644); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if r.err != nil {
			return errors.New("some runs failed: their rows say why")
		}
	}
	return nil
}

// measureAll runs every backlog, shape and C in turn; a run that fails
// has its error in its row.
func measureAll(ctx context.Context, o options, stderr io.Writer) ([]row, error) {
	var rows []row
	for _, backlog := range o.backlogs {
		for _, shape := range o.shapes {
			for _, c := range o.cs {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				fmt.Fprintf(stderr, "experiment-burst: backlog %d, %s, C = %d\n", backlog, shape, c)
				r := measure(ctx, stderr, o, backlog, shape, c)
				if r.err != nil {
					fmt.Fprintf(stderr, "experiment-burst: %v\n", r.err)
				}
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

// Command loadgen is knowngood's reference load client. Each scenario is a
// subcommand with its own flags (loadgen SCENARIO -h lists them):
//
//	loadgen handshake -url http://127.0.0.1:8080 -n 500 -deadline 15s -transport websocket
//	loadgen echo -url ws://127.0.0.1:8080/ -c 100 -size 128 -mode pipelined -duration 10s
//	loadgen conns -url ws://127.0.0.1:8080/ -n 19000 -batch 1000 -sources 127.0.0.1-127.0.0.8
//	loadgen broadcast -url ws://127.0.0.1:8080/ -subscribers 10000 -senders 10 -rate 100 -duration 10s
//	loadgen watch -admin http://127.0.0.1:9100 -client-attempts 100 -client-ok 39 -- COMMAND ARGS...
//
// handshake opens Socket.IO connections at once and times their namespace
// CONNECT (loadgen/handshake); echo measures message rate and latency on
// WebSocket or raw TCP echo targets (loadgen/echo); conns opens idle
// connections and reports what each costs the target (loadgen/conns);
// broadcast measures fan-out latency and loss on targets that speak the
// websocket-shootout protocol (loadgen/broadcast); watch runs any other
// load tool and reconciles what it says with what the target saw
// (loadgen/watch). Each prints a table; -json writes the report as one JSON
// object, and the scenarios' -csv and -html their per-second samples as
// CSV and a self-contained HTML page with charts. The server's own view
// comes from its /stats. Exit status: 0 when the run took place (the
// report tells how it went), 1 when it could not, 2 for bad flags, 130 when
// interrupted (after printing the partial report).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"knowngood/loadgen/broadcast"
	"knowngood/loadgen/conns"
	"knowngood/loadgen/echo"
	"knowngood/loadgen/handshake"
	"knowngood/loadgen/htmlreport"
	"knowngood/loadgen/watch"
)

// scenarios is every subcommand.
var scenarios = []scenario{
	newScenario("handshake", handshake.ParseFlags, handshake.Usage, handshake.Run, func(c handshake.Config) files { return files{c.JSON, c.CSV, c.HTML} }),
	newScenario("echo", echo.ParseFlags, echo.Usage, echo.Run, func(c echo.Config) files { return files{c.JSON, c.CSV, c.HTML} }),
	newScenario("conns", conns.ParseFlags, conns.Usage, conns.Run, func(c conns.Config) files { return files{c.JSON, c.CSV, c.HTML} }),
	newScenario("broadcast", broadcast.ParseFlags, broadcast.Usage, broadcast.Run, func(c broadcast.Config) files { return files{c.JSON, c.CSV, c.HTML} }),
	newScenario("watch", watch.ParseFlags, watch.Usage, watch.Run, func(c watch.Config) files { return files{json: c.JSON} }),
}

const usage = "usage: loadgen handshake|echo|conns|broadcast|watch [flags] (loadgen SCENARIO -h lists them)"

func main() {
	// The zishang520 engine.io client catches SIGINT and SIGTERM itself
	// (and then does not exit): stop the run on them here.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile, err := startCPUProfile(os.Getenv("LOADGEN_CPUPROFILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}

// startCPUProfile writes a CPU profile of the whole run to path (the
// LOADGEN_CPUPROFILE environment variable; go tool pprof reads it), to see
// where the client's own CPU goes. An empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("LOADGEN_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("LOADGEN_CPUPROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	for _, s := range scenarios {
		if len(args) > 0 && args[0] == s.name {
			return s.main(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintln(stderr, usage)
	return 2
}

// scenario is one subcommand: parse its flags, run it, print its report.
type scenario struct {
	name string
	main func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// report is what every scenario's Run returns.
type report interface {
	WriteTable(io.Writer) error
	WriteJSON(io.Writer) error
}

// charted is a report with per-second samples and charts, for -csv and
// -html: every scenario's but watch's (the tool it runs keeps its own).
type charted interface {
	WriteCSV(io.Writer) error         // the per-second samples
	HTMLRun() (htmlreport.Run, error) // the run, for the -html page
}

// files are the report's files: -json, -csv and -html.
type files struct{ json, csv, html string }

func newScenario[C any, R report](name string, parse func([]string) (C, error), usage func(io.Writer),
	runScenario func(context.Context, C, io.Writer) (R, error), filesOf func(C) files) scenario {
	return scenario{name: name, main: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		cfg, err := parse(args)
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "loadgen %s: %v\n", name, err)
			return 2
		}
		rep, err := runScenario(ctx, cfg, stderr)
		if err == nil {
			err = write(filesOf(cfg), name, rep, stdout, stderr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "loadgen %s: %v\n", name, err)
			return 1
		}
		if ctx.Err() != nil {
			return 130 // interrupted: the report is partial
		}
		if e, ok := any(rep).(interface{ ExitStatus() int }); ok && e.ExitStatus() != 0 {
			return 1 // loadgen watch: the command failed (its status is in the report)
		}
		return 0
	}}
}

// write prints the table, and writes the files asked for; with -json - the
// JSON goes to stdout and the table to stderr.
func write(f files, name string, rep report, stdout, stderr io.Writer) error {
	// The table first: a file that cannot be written loses nothing else.
	table := stdout
	if f.json == "-" {
		table = stderr
	}
	if err := rep.WriteTable(table); err != nil {
		return err
	}
	switch f.json {
	case "":
	case "-":
		if err := rep.WriteJSON(stdout); err != nil {
			return err
		}
	default:
		if err := writeFile(f.json, rep.WriteJSON); err != nil {
			return err
		}
	}
	c, ok := rep.(charted)
	if !ok {
		return nil
	}
	if f.csv != "" {
		if err := writeFile(f.csv, c.WriteCSV); err != nil {
			return err
		}
	}
	if f.html != "" {
		run, err := c.HTMLRun()
		if err != nil {
			return err
		}
		return writeFile(f.html, func(w io.Writer) error {
			return htmlreport.WriteHTML(w, "loadgen "+name, []htmlreport.Run{run})
		})
	}
	return nil
}

// writeFile creates path and writes it with fn.
func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

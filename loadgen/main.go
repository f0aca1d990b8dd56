// Command loadgen is knowngood's reference load client. Each scenario is a
// subcommand with its own flags (loadgen SCENARIO -h lists them):
//
//	loadgen handshake -url http://127.0.0.1:8080 -n 500 -deadline 15s -transport websocket
//	loadgen echo -url ws://127.0.0.1:8080/ -c 100 -size 128 -mode pipelined -duration 10s
//	loadgen conns -url ws://127.0.0.1:8080/ -n 19000 -batch 1000 -sources 127.0.0.1-127.0.0.8
//	loadgen broadcast -url ws://127.0.0.1:8080/ -subscribers 10000 -senders 10 -rate 100 -duration 10s
//	loadgen watch -admin http://127.0.0.1:9100 -- COMMAND ARGS...
//	loadgen merge -json all.json shard1.json shard2.json
//
// handshake opens Socket.IO connections at once and times their namespace
// CONNECT (loadgen/handshake); echo measures message rate and latency on
// WebSocket or raw TCP echo targets (loadgen/echo); conns opens idle
// connections and reports what each costs the target (loadgen/conns);
// broadcast measures fan-out latency and loss on targets that speak the
// websocket-shootout protocol (loadgen/broadcast); watch runs any other
// load tool and reconciles what it says with what the target saw
// (loadgen/watch); merge makes one report of the -json reports of a run's
// shards, made with -shard I/N by several loadgen processes
// (loadgen/merge). Each prints a table; -json writes the report as one JSON
// object, and the scenarios' -csv and -html their per-second samples as
// CSV and a self-contained HTML page with charts. The server's own view
// comes from its /stats (of a target of several replicas, the sum over
// them: -admin lists each one's admin listener).
//
// Every scenario and watch take -threshold EXPR, repeatable, k6-style
// pass/fail criteria on the run's metrics ('p99<50ms', 'success>=99.9%',
// 'lost==0'; loadgen SCENARIO -h lists the metrics), printed with their
// outcome after the report and recorded in -json. Exit status, for a CI
// step:
//
//	0    pass
//	1    the run failed: nothing succeeded (no connection established, no
//	     message echoed or delivered), a verdict found a loss on either
//	     side (connections or messages one side counted and the other did
//	     not, or dropped by the server's -fault-drop), a -threshold was
//	     crossed, or (watch) the command exited non-zero; or the run could
//	     not take place (a file not written, too few open files)
//	2    bad flags
//	3    could not reach the target: no connection was established and a
//	     TCP dial to the target's address fails too (refused, unknown host,
//	     no route, no answer in 3s); watch: no /stats from -admin before
//	     the command (which is then not run)
//	130  interrupted, after printing the partial report
//
// merge exits 1 when the merged report fails by the same rules.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/knowngood/knowngood/loadgen/broadcast"
	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/loadgen/echo"
	"github.com/knowngood/knowngood/loadgen/handshake"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/merge"
	"github.com/knowngood/knowngood/loadgen/reconcile"
	"github.com/knowngood/knowngood/loadgen/sustain"
	"github.com/knowngood/knowngood/loadgen/watch"
)

// scenarios is every subcommand.
var scenarios = []scenario.Command{
	scenario.NewCommand("handshake", handshake.ParseFlags, handshake.Usage, handshake.Run, scenario.CommonFiles[handshake.Config]),
	scenario.NewCommand("echo", echo.ParseFlags, echo.Usage, echo.Run, scenario.CommonFiles[echo.Config]),
	scenario.NewCommand("conns", conns.ParseFlags, conns.Usage, conns.Run, scenario.CommonFiles[conns.Config]),
	scenario.NewCommand("sustain", sustain.ParseFlags, sustain.Usage, sustain.Run, scenario.CommonFiles[sustain.Config]),
	scenario.NewCommand("broadcast", broadcast.ParseFlags, broadcast.Usage, broadcast.Run, scenario.CommonFiles[broadcast.Config]),
	scenario.NewCommand("watch", watch.ParseFlags, watch.Usage, watch.Run, func(c watch.Config) scenario.Files { return scenario.Files{JSON: c.JSON} }),
	scenario.NewCommand("reconcile", reconcile.ParseFlags, reconcile.Usage, reconcile.Run, func(c reconcile.Config) scenario.Files { return scenario.Files{JSON: c.JSON} }),
	scenario.NewCommand("merge", merge.ParseFlags, merge.Usage, merge.Run, merge.Config.Files),
}

// summaries says what each scenario is for, one line each, in the usage.
var summaries = []struct{ name, line string }{
	{"handshake", "open Socket.IO connections at once and time their namespace CONNECT"},
	{"echo", "message rate and latency on a WebSocket or raw TCP echo target"},
	{"conns", "open idle connections and report what each one costs the target"},
	{"broadcast", "fan-out latency and loss on a websocket-shootout target (or its timed push)"},
	{"sustain", "hold Socket.IO clients in steps, each emitting every few seconds, with room pushes"},
	{"watch", "run another load tool and reconcile what it says with what the target saw"},
	{"merge", "make one report of the -json reports of a run's shards (-shard I/N)"},
	{"reconcile", "reconcile a saved /stats snapshot with counts typed after the run"},
}

// writeUsage lists the scenarios, one line each, and the exit statuses.
func writeUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: loadgen SCENARIO [flags]   (loadgen SCENARIO -h, or loadgen help SCENARIO, lists its flags)")
	fmt.Fprintln(w, "\nscenarios:")
	for _, s := range summaries {
		fmt.Fprintf(w, "  %-11s%s\n", s.name+":", s.line)
	}
	fmt.Fprint(w, "\n"+scenario.ExitHelp)
}

func main() { os.Exit(realMain()) }

// realMain runs the command with the process's arguments and standard
// streams, and returns its exit status (main exits with it, after the
// deferred work here is done).
func realMain() int {
	if printVersion(os.Args[1:], os.Stdout) {
		return 0
	}
	// The zishang520 engine.io client catches SIGINT and SIGTERM itself
	// (and then does not exit): stop the run on them here.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile, err := startCPUProfile(os.Getenv("LOADGEN_CPUPROFILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	stop()
	return code
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
	if len(args) == 0 {
		writeUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && name == "help" && scenarioNamed(args[1]) != nil {
			return scenarioNamed(args[1]).Main(ctx, []string{"-h"}, stdout, stderr)
		}
		if len(args) > 1 && name == "help" {
			fmt.Fprintf(stderr, "loadgen: unknown scenario %q\n", args[1])
			writeUsage(stderr)
			return 2
		}
		writeUsage(stdout)
		return 0
	}
	if s := scenarioNamed(name); s != nil {
		return s.Main(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "loadgen: unknown scenario %q\n", name)
	writeUsage(stderr)
	return 2
}

// scenarioNamed is the scenario called name; nil when there is none.
func scenarioNamed(name string) *scenario.Command {
	for i := range scenarios {
		if scenarios[i].Name == name {
			return &scenarios[i]
		}
	}
	return nil
}

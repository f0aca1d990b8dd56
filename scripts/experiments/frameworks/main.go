// Command frameworks is the framework comparison rerun (make
// experiment-frameworks): a published benchmark of eight WebSocket
// frameworks, each as minimal as the report wrote it (echo only,
// TCP_NODELAY, no logging), run here with the real frameworks
// (scripts/internal/frameworks: Node's ws and socket.io, Python's
// websockets and FastAPI on uvicorn with and without uvloop, Netty, Tomcat
// 10's WebSocket for Spring's, and the minimal gorilla and coder servers)
// beside knowngood's echo targets and its Socket.IO target, under the same
// client, with the report's three scenarios:
//
//   - echo: one connection, 128-byte text messages, "sync" (send one, wait
//     for its echo) and "async" (up to -inflight awaiting their echo,
//     sender and receiver apart), msg/s over -duration after -warmup;
//   - conns: -conns connections added -batch at a time over -shards
//     loadgen processes, each from loopback addresses of its own, held
//     idle; the server's resident memory per connection;
//   - latency: -latency-conns connections, each echoing one message every
//     -heartbeat (the report's heartbeat), p50 and p99 of the round trip.
//
// Each scenario starts a fresh server and is run -reps times; the tables
// give medians, both sides' CPU (the client shares the two cores with the
// server), the ratios to gorilla here and in the report, whether the
// ordering agrees, and which rows the client, not the server, bounded.
// The Socket.IO rows use Socket.IO clients (loadgen's lean client) with the
// "message" event echoed; they are compared with each other, not with the
// WebSocket rows' client.
//
//	go run ./scripts/experiments/frameworks [-frameworks ...] [-scenarios echo,conns,latency] [-reps 3]
//	    [-duration 10s] [-warmup 2s] [-inflight 32] [-conns 10000] [-batch 1000] [-shards 2]
//	    [-latency-conns 10000] [-heartbeat 5s] [-out FILE]
//
// Run it from the repository root, after make deps. Everything listens on
// 127.0.0.1, and every process it starts is stopped before it returns.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

// Scenarios.
const (
	scEcho    = "echo"
	scConns   = "conns"
	scLatency = "latency"
)

var allScenarios = []string{scEcho, scConns, scLatency}

type options struct {
	subjects         []subject
	scenarios        []string
	reps             int
	duration, warmup time.Duration
	size, inflight   int
	conns, batch     int
	shards           int
	hold             time.Duration
	latencyConns     int
	heartbeat        time.Duration
	out              string
}

func main() { benchrun.Main("experiment-frameworks", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("experiment-frameworks", flag.ContinueOnError)
	all := allSubjects()
	frameworks := fs.String("frameworks", strings.Join(keysOf(all), ","), "comma-separated `list` of servers: the report's frameworks and knowngood's targets beside them")
	scenarios := fs.String("scenarios", strings.Join(allScenarios, ","), "comma-separated `list` of scenarios: echo (one connection, sync and async), conns (connections held), latency (round trips at -latency-conns)")
	reps := fs.Int("reps", 3, "runs of each scenario on each server; the tables give medians")
	duration := fs.Duration("duration", 10*time.Second, "the measured window of each echo and latency run (the report's: 50 s)")
	warmup := fs.Duration("warmup", 2*time.Second, "traffic before each window that the figures leave out (the report's: 10 s)")
	size := fs.Int("size", 128, "bytes per message")
	inflight := fs.Int("inflight", 32, "async echo: messages awaiting their echo on the connection")
	conns := fs.Int("conns", 10000, "conns: connections to open and hold on each server (the open-files limit of each process applies)")
	batch := fs.Int("batch", 1000, "conns: connections dialled at once, in all (the report's: 1,000)")
	shards := fs.Int("shards", 2, "conns: loadgen processes the connections are spread over, each from loopback addresses of its own")
	hold := fs.Duration("hold", 3*time.Second, "conns: how long the connections are held once all are open")
	latencyConns := fs.Int("latency-conns", 10000, "latency: connections, each echoing one message every -heartbeat (the report's: 10,000)")
	heartbeat := fs.Duration("heartbeat", 5*time.Second, "latency: how often each connection sends (the report's heartbeat: 5 s)")
	out := fs.String("out", "", "also write the tables to `FILE`")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{reps: *reps, duration: *duration, warmup: *warmup, size: *size, inflight: *inflight, conns: *conns, batch: *batch,
		shards: *shards, hold: *hold, latencyConns: *latencyConns, heartbeat: *heartbeat, out: *out}
	keys, err := benchrun.Pick("frameworks", *frameworks, keysOf(all))
	if err != nil {
		return options{}, err
	}
	for _, k := range keys {
		o.subjects = append(o.subjects, all[slices.IndexFunc(all, func(s subject) bool { return s.key == k })])
	}
	if o.scenarios, err = benchrun.Pick("scenarios", *scenarios, allScenarios); err != nil {
		return options{}, err
	}
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{{"reps", o.reps, 1, 100}, {"size", o.size, 1, 1 << 20}, {"inflight", o.inflight, 1, 4096}, {"conns", o.conns, 1, 1000000},
		{"batch", o.batch, 1, 1000000}, {"shards", o.shards, 1, 64}, {"latency-conns", o.latencyConns, 1, 1000000}} {
		if c.v < c.lo || c.v > c.hi {
			return options{}, fmt.Errorf("invalid value %d for flag -%s: want %d to %d", c.v, c.name, c.lo, c.hi)
		}
	}
	switch {
	case o.duration <= 0:
		return options{}, errors.New("invalid value for flag -duration: want a positive duration")
	case o.warmup < 0 || o.hold < 0:
		return options{}, errors.New("invalid value for flag -warmup or -hold: want 0 or more")
	case o.heartbeat <= 0:
		return options{}, errors.New("invalid value for flag -heartbeat: want a positive duration")
	case o.shards > o.conns:
		return options{}, fmt.Errorf("invalid value %d for flag -shards: more shards than -conns (%d)", o.shards, o.conns)
	}
	return o, nil
}

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	machine := benchrun.StartMachine()
	res := results{}
	for rep := 1; rep <= o.reps; rep++ {
		// The servers take turns within a repetition, so that a slow
		// minute of the machine falls on all of them rather than on one.
		for _, s := range o.subjects {
			if err := s.available(); err != nil {
				if rep == 1 {
					fmt.Fprintf(stderr, "%s: cannot run here: %v\n", s.row, err)
				}
				continue
			}
			for _, sc := range o.scenarios {
				fmt.Fprintf(stderr, "repetition %d of %d: %s, %s\n", rep, o.reps, s.row, sc)
				parts := measure(ctx, stderr, o, bins, s, sc)
				for name, x := range parts {
					if x.err != nil {
						fmt.Fprintf(stderr, "  %s: %v\n", name, x.err)
					}
				}
				res.add(s.key, parts)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	var out bytes.Buffer
	writeTables(&out, o, res)
	fmt.Fprintf(&out, "\n%s\n", machine.Summary())
	_, _ = stdout.Write(out.Bytes())
	if o.out != "" {
		return os.WriteFile(o.out, out.Bytes(), 0o644)
	}
	return nil
}

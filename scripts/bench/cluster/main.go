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
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

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
		native := sioSetup(ctx, stderr, o, sioNativeRedis)
		node := sioSetup(ctx, stderr, o, sioNodeRedis)
		kg.compare(node, "Node's", false, sioGoal)
		native.compare(node, "Node's", false, sioGoal)
		rows = append(rows, kg, native, node)
	}
	if slices.Contains(o.parts, "sio-single") && ctx.Err() == nil {
		bare := sioSetup(ctx, stderr, o, sioBare)
		empty := sioSetup(ctx, stderr, o, sioEmpty)
		native := sioSetup(ctx, stderr, o, sioNative)
		gnet := sioSetup(ctx, stderr, o, sioNativeGnet)
		node := sioSetup(ctx, stderr, o, sioNode)
		bare.compare(node, "Node's", false, 0)
		for _, r := range []*row{empty, native, gnet} {
			r.compare(node, "Node's", false, sioGoal)
		}
		empty.compare(bare, "the bare server's", true, 0)
		rows = append(rows, bare, empty, native, gnet, node)
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

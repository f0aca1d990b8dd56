// Command cluster is the cluster experiment (make experiment-cluster):
// a Socket.IO cluster load test of many connections reproduced on one
// machine. Replicas of `empty` joined through Redis (-redis) stand behind
// nginx (least_conn); several `loadgen sustain` processes ramp Socket.IO
// clients (WebSocket only) up to -conns in steps; each client emits an
// acknowledged `echo` every -emit-interval, and room pushes go out at
// -push-rate through the targets' broadcast-room. It sizes the run from
// the machine (replicas, loadgen shards and nginx workers from the
// open-files limit and the cores), reports every step (terminal table,
// -json, -html) with the client's figures reconciled with the replicas'
// /stats and the CPU and memory of every process from /proc, names the
// resource that limits the next step, and exits 1 when one of the
// -threshold criteria (by default the five targets of the original run)
// did not hold.
//
// The failures of the original run, on demand:
//
//	-fault emfile        one replica under a low open-files limit
//	-fault leak-timers   every replica leaks a timer per connection, clients churn
//	-redis-shards N      rooms spread by hash over N Redis servers
//	-kill-replica AT     one replica killed AT into the run; the clients reconnect
//
//	go run ./scripts/experiments/cluster [-conns 100000] [-replicas 0] [-step 0] [-steps 10] [-step-duration 20s]
//	[-emit-interval 1s-5s] [-push-rate 10] [-rooms 100] [-fault emfile|leak-timers] [-redis-shards 1]
//	[-kill-replica 0] [-engine NAME] [-client lean|zishang520] [-ping-interval 0] [-threshold EXPR]... [-json FILE] [-html FILE]
//
// Run it from the repository root, with redis-server and nginx installed
// (make deps). Everything listens on 127.0.0.1; on Linux the lean clients
// dial from loopback addresses of their own shard's (127.0.0.2 up), and
// nginx dials the replicas from the client's address, so that no address
// needs more ports than connect() finds quickly. Every process it starts
// is stopped before it returns, on an error or an interrupt (Ctrl-C) too.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/loadgen/passfail"
	"github.com/knowngood/knowngood/loadgen/sustain"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/procfs"
)

// The faults of -fault.
const (
	faultEMFILE     = "emfile"
	faultLeakTimers = "leak-timers"
)

type options struct {
	conns        int
	replicas     int // 0 = from the machine
	shards       int // 0 = from the machine
	steps        int
	stepDuration time.Duration
	emitInterval string
	pushRate     float64
	rooms        int
	fault        string
	redisShards  int
	killAt       time.Duration // 0 = no kill
	stallAt      time.Duration // -stall-replica: when the last replica stops...
	stallFor     time.Duration // ...and for how long (0 = no stall)
	churn        float64
	engine       string
	client       string
	clientLoop   bool
	pingInterval time.Duration
	thresholds   []passfail.Threshold
	jsonOut      string
	htmlOut      string
	runDir       string
}

func main() { benchrun.Main("experiment-cluster", parseFlags, run) }

// defaultThresholds are the original run's five targets.
var defaultThresholds = []string{"success>=99.9%", "msgs_per_s_per_replica>=5000", "p99<=200ms", "cpu_pct_max<=70", "mem_pct_max<=80"}

// metrics are what -threshold may name.
var metrics = []passfail.Metric{
	{Name: "success", Kind: passfail.Share, Help: "connects that succeeded, of all attempts, every step"},
	{Name: "msgs_per_s_per_replica", Kind: passfail.Number, Help: "messages received and sent per second per replica (the servers' counts), at the last step"},
	{Name: "p99", Kind: passfail.Duration, Help: "99th percentile of the emits' ack latency, every step"},
	{Name: "push_p99", Kind: passfail.Duration, Help: "99th percentile of the room pushes' latency, every step"},
	{Name: "cpu_pct_max", Kind: passfail.Number, Help: "the busiest replica's CPU, % of one core, at any step"},
	{Name: "mem_pct_max", Kind: passfail.Number, Help: "the machine's memory in use, % of all, at any step"},
	{Name: "lost", Kind: passfail.Number, Help: "connections the clients lost without closing them"},
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("experiment-cluster", flag.ContinueOnError)
	o := options{}
	fs.IntVar(&o.conns, "conns", 100000, "Socket.IO connections at the last step, all clients together")
	fs.IntVar(&o.replicas, "replicas", 0, "replicas of `empty` behind nginx (0 = as many as the open-files limit needs, at least 3)")
	fs.IntVar(&o.shards, "shards", 0, "loadgen processes the clients are spread over (0 = as many as the open-files limit needs, at least one per core)")
	step := fs.Int("step", 0, "connections added at each step (0 = -conns / -steps); sets -steps to -conns / -step")
	fs.IntVar(&o.steps, "steps", 10, "steps of the ramp")
	fs.DurationVar(&o.stepDuration, "step-duration", 20*time.Second, "how long each step lasts")
	fs.StringVar(&o.emitInterval, "emit-interval", "1s-5s", "`MIN-MAX` between one client's emits (uniformly at random)")
	fs.Float64Var(&o.pushRate, "push-rate", 10, "room pushes per second, all clients together (broadcast-room)")
	fs.IntVar(&o.rooms, "rooms", 100, "rooms the clients are spread over")
	fs.StringVar(&o.fault, "fault", "", "a failure to show: emfile (one replica under a low open-files limit) or leak-timers (every replica with -fault-leak-timers, the clients churning)")
	fs.IntVar(&o.redisShards, "redis-shards", 1, "Redis servers the rooms are spread over by hash")
	fs.DurationVar(&o.killAt, "kill-replica", 0, "kill one replica (SIGKILL) this long into the run (0 = none); its clients reconnect to the others")
	fs.Func("stall-replica", "`AT:DURATION`: stop the last replica (SIGSTOP) AT into the run, and let it go on (SIGCONT) DURATION later, as a replica whose loop stalls; the hop verdict should name it", func(v string) error {
		at, dur, ok := strings.Cut(v, ":")
		var err1, err2 error
		o.stallAt, err1 = time.ParseDuration(at)
		o.stallFor, err2 = time.ParseDuration(dur)
		if !ok || err1 != nil || err2 != nil || o.stallAt <= 0 || o.stallFor <= 0 {
			return errors.New("want AT:DURATION, two positive durations (30s:3s)")
		}
		return nil
	})
	fs.Float64Var(&o.churn, "churn", -1, "share of the clients that disconnect and connect again at each step (default 0, and 0.5 with -fault leak-timers)")
	// The native engine on gnet by default: at the report's rate its
	// replicas took 0.4-0.7 of a core between them at 10,000-20,000
	// connections where zishang520's saturated the cores from 10,000-12,000,
	// and each connection holds 6 KiB of a replica against 66 (README).
	fs.StringVar(&o.engine, "engine", config.EngineNativeGnet, "the replicas' Socket.IO `ENGINE` (knowngood -engine): native-gnet (the default: the cheaper replicas, see scripts/experiments/README.md), native or zishang520 (the target's own default)")
	fs.StringVar(&o.client, "client", "lean", "loadgen sustain's Socket.IO `CLIENT`: lean (loadgen/siolite on event loops) or zishang520 (the Go client library)")
	fs.BoolVar(&o.clientLoop, "client-loop", true, "the lean client reads on event loops (loadgen sustain -loop); false: a goroutine per connection, as before")
	fs.DurationVar(&o.pingInterval, "ping-interval", 0, "the replicas' Engine.IO ping interval (knowngood -ping-interval; 0 = its default, 25s): at 100,000 connections the pings are most of the messages, 4,000/s at 25s")
	var ts []string
	fs.Func("threshold", "pass/fail criterion `EXPR`, repeatable, as loadgen's (default: "+strings.Join(defaultThresholds, " ")+"); metrics: "+metricNames(), func(v string) error {
		ts = append(ts, v)
		return nil
	})
	fs.StringVar(&o.jsonOut, "json", "", "also write the report as JSON to `FILE`")
	fs.StringVar(&o.htmlOut, "html", "", "also write the report as one HTML page to `FILE`")
	fs.StringVar(&o.runDir, "run-dir", "", "keep the processes' logs and nginx.conf in `DIR` (default: a temporary directory, removed after)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *step > 0 {
		o.steps = max(1, (o.conns+*step-1) / *step)
	}
	if len(ts) == 0 {
		ts = defaultThresholds
	}
	for _, s := range ts {
		t, err := passfail.Parse(s, metrics)
		if err != nil {
			return options{}, fmt.Errorf("invalid value %q for flag -threshold: %v", s, err)
		}
		o.thresholds = append(o.thresholds, t)
	}
	if o.churn < 0 {
		o.churn = 0
		if o.fault == faultLeakTimers {
			o.churn = 0.5
		}
	}
	return o, o.check()
}

func (o options) check() error {
	switch {
	case o.conns < 2:
		return errors.New("invalid value for flag -conns: want 2 or more")
	case !slices.Contains(config.Engines, o.engine):
		return fmt.Errorf("invalid value %q for flag -engine: want %s", o.engine, strings.Join(config.Engines, ", "))
	case o.steps < 1:
		return errors.New("invalid value for flag -steps: want 1 or more")
	case o.stepDuration < time.Second:
		return errors.New("invalid value for flag -step-duration: want at least 1s")
	case o.replicas < 0 || o.replicas == 1:
		return errors.New("invalid value for flag -replicas: want 0 (from the machine) or 2 or more")
	case o.shards < 0:
		return errors.New("invalid value for flag -shards: want 0 (from the machine) or more")
	case o.fault != "" && o.fault != faultEMFILE && o.fault != faultLeakTimers:
		return fmt.Errorf("invalid value %q for flag -fault: want emfile or leak-timers", o.fault)
	case o.redisShards < 1 || o.redisShards > 16:
		return errors.New("invalid value for flag -redis-shards: want 1 to 16")
	case o.killAt < 0 || o.killAt >= time.Duration(o.steps)*o.stepDuration:
		return errors.New("invalid value for flag -kill-replica: want 0 (none) or a time inside the run (-steps x -step-duration)")
	case o.stallAt+o.stallFor >= time.Duration(o.steps)*o.stepDuration:
		return errors.New("invalid value for flag -stall-replica: want a stall that ends inside the run (-steps x -step-duration)")
	case o.client != sustain.ClientLean && o.client != sustain.ClientZishang520:
		return fmt.Errorf("invalid value %q for flag -client: want %s or %s", o.client, sustain.ClientLean, sustain.ClientZishang520)
	case o.pingInterval < 0 || (o.pingInterval > 0 && o.pingInterval < 100*time.Millisecond):
		return errors.New("invalid value for flag -ping-interval: want 0 (the target's default) or at least 100ms")
	case o.churn > 1:
		return errors.New("invalid value for flag -churn: want a share from 0 to 1")
	case o.pushRate < 0 || o.rooms < 1:
		return errors.New("invalid value for flag -push-rate or -rooms: want -push-rate >= 0 and -rooms >= 1")
	}
	return nil
}

func metricNames() string {
	var names []string
	for _, m := range metrics {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// sizing is how the run spreads over processes on this machine.
type sizing struct {
	limit        int // the open-files hard limit of one process
	perProcess   int // connections one process may hold under it
	replicas     int
	shards       int
	nginxWorkers int
	nginxConns   int // worker_connections: descriptors of each worker
	cores        int
	sources      int // loopback addresses each shard dials from; 0 = the kernel's choice
}

// descriptorSlack is what a process keeps for everything but its
// connections: listeners, Redis, logs, the admin listener's clients.
const descriptorSlack = 200

// size fits the run to the open-files hard limit: no process (replica,
// loadgen shard, nginx worker) is given more connections than nine tenths
// of it, less the slack; a proxied connection holds two of nginx's
// descriptors, and reuseport spreads them over the workers only about
// evenly, so nginx gets a seventh more workers than the sum needs.
func size(o options) (sizing, error) {
	_, hard, err := procfs.OpenFilesLimits(os.Getpid())
	if err != nil {
		return sizing{}, fmt.Errorf("open-files limit unknown on this platform: %v", err)
	}
	s := sizing{limit: min(hard, 1<<20), cores: runtime.NumCPU()}
	s.perProcess = s.limit*9/10 - descriptorSlack
	if s.perProcess < 100 {
		return sizing{}, fmt.Errorf("the open-files hard limit is %d: too low for a cluster run (ulimit -Hn)", s.limit)
	}
	need := ceilDiv(o.conns, s.perProcess)
	s.replicas = max(3, need)
	if o.replicas > 0 {
		if o.replicas < need {
			return sizing{}, fmt.Errorf("invalid value %d for flag -replicas: %d connections need at least %d replicas under the open-files limit of %d (%d each)",
				o.replicas, o.conns, need, s.limit, s.perProcess)
		}
		s.replicas = o.replicas
	}
	s.shards = max(s.cores, need)
	if o.shards > 0 {
		if o.shards < need {
			return sizing{}, fmt.Errorf("invalid value %d for flag -shards: %d connections need at least %d loadgen processes under the open-files limit of %d",
				o.shards, o.conns, need, s.limit)
		}
		s.shards = o.shards
	}
	s.shards = min(s.shards, o.conns)
	s.nginxWorkers = max(s.cores, ceilDiv(2*o.conns*8, s.perProcess*7))
	s.nginxConns = s.perProcess
	return s, s.sizeSources(o)
}

// firstSource is the last byte of the first loopback address the shards
// dial from: 127.0.0.1 stays for everything else on the machine.
const firstSource = 2

// sizeSources gives each shard enough loopback addresses of its own
// (Linux routes all of 127.0.0.0/8 to lo) that no address holds more than
// pairBudget connections to its nginx port; nginx dials the replicas from
// the client's address (proxy_bind), so the same holds on that side.
// Without it, connect() from one address to one port slows about tenfold
// past half the ephemeral range (it tries the ports of one parity first),
// which showed as connects timing out on saturated cores at 85,000
// connections with 6 shards. The zishang520 client binds no address.
func (s *sizing) sizeSources(o options) error {
	if runtime.GOOS != "linux" || o.client != sustain.ClientLean {
		return nil
	}
	s.sources = ceilDiv(ceilDiv(o.conns, s.shards), pairBudget(portRange()))
	if last := firstSource - 1 + s.shards*s.sources; last > 254 {
		return fmt.Errorf("%d connections over %d loadgen shards need %d loopback source addresses each, more than 127.0.0.%d-127.0.0.254 holds: give fewer -conns or widen net.ipv4.ip_local_port_range",
			o.conns, s.shards, s.sources, firstSource)
	}
	return nil
}

// pairBudget is how many connections one source address may hold to one
// destination: four fifths of the half of the ephemeral range (of r
// ports; 0 = unknown, taken as Linux's default of 28,232) that connect()
// tries first.
func pairBudget(r int) int {
	if r <= 0 {
		r = 28232
	}
	return max(1, r/2*4/5)
}

// shardSources is shard i's -sources, "" for the kernel's choice.
func (s sizing) shardSources(i int) string {
	if s.sources == 0 {
		return ""
	}
	first := firstSource + i*s.sources
	return fmt.Sprintf("127.0.0.%d-127.0.0.%d", first, first+s.sources-1)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// run is the whole experiment.
func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	// The kill goroutine reports on stderr while the steps do.
	stderr = &lockedWriter{w: stderr}
	sz, err := size(o)
	if err != nil {
		return err
	}
	machine := benchrun.StartMachine()
	c, err := startCluster(ctx, o, sz, bins, stderr)
	if c != nil {
		defer c.stop(stderr)
	}
	if err != nil {
		return err
	}
	res, err := drive(ctx, o, sz, c, bins, stderr)
	if err != nil {
		return err
	}
	rep := buildReport(o, sz, c, res, machine)
	if err := rep.write(o, stdout); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted; the report covers the steps done: %w", ctx.Err())
	}
	if !passfail.Passed(rep.Thresholds) {
		return fmt.Errorf("%d of %d thresholds did not hold", crossed(rep.Thresholds), len(rep.Thresholds))
	}
	return nil
}

func crossed(rs []passfail.Result) int {
	n := 0
	for _, r := range rs {
		if !r.OK {
			n++
		}
	}
	return n
}

// lockedWriter lets several goroutines write one io.Writer, a line each.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Command conns is the idle-connections benchmark (make bench-conns): for
// each echo target (echo-tcp and one per WebSocket library), the
// gnet broadcast (its idle subscribers), the minimal echo server on each
// library alone (gorilla-floor, coder-floor, gnet-floor, nbio-floor:
// scripts/bench/floors/LIBecho) and the Node `ws` echo server for comparison, and the Socket.IO rows (sio.go:
// the baseline variant on each engine, the bare zishang520 server and Node's
// socket.io, each holding Socket.IO sockets), it starts a fresh server, runs
// `loadgen conns` at the highest count that both processes' open-files
// limits allow (each connection takes a descriptor on both sides), and
// prints a Markdown table of the server's resident memory per idle
// connection, in KiB, with the goals for each target: an absolute bound
// by library, and against the library's floor measured in the same run
// (the registry's Goals.IdleOfFloor; nbio's is reported only).
//
//	go run ./scripts/bench/conns [-n 0] [-batch 1000] [-sources 127.0.0.1-127.0.0.8] [-hold 5s]
//	                             [-variants echo-tcp,echo-gorilla,echo-coder,echo-gnet,echo-nbio,broadcast-gnet,gorilla-floor,coder-floor,gnet-floor,nbio-floor,node,
//	                                        sio-zishang520,sio-native,sio-native-gnet,sio-bare,sio-node]
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
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/procfs"
)

const node = benchrun.Node

// idleGoal is the upper bound, KiB of server RSS per idle connection, of
// lib's targets (the registry's Goals.IdleKiB): by library, since an idle
// connection's cost is the library's.
func idleGoal(lib variants.Library) (float64, bool) {
	w, ok := variants.LookupWebSocketLibrary(lib)
	return w.Goals.IdleKiB, ok
}

// broadcastGnet is the broadcast target whose idle subscribers are
// measured beside the echoes: every connection to it joins the hub.
var broadcastGnet = benchrun.GnetBroadcast

// reserve is the descriptors left free in each process besides its
// connections: loadgen keeps 32 of its own (loadgen/internal/proc), plus
// those it has open when it checks.
const reserve = 64

type options struct {
	n        int // 0: as many as the limits allow
	batch    int
	sources  string
	hold     time.Duration
	variants []string
}

func main() { benchrun.Main("bench-conns", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-conns", flag.ContinueOnError)
	n := fs.Int("n", 0, "connections per target; 0 = as many as both processes' open-files limits allow")
	batch := fs.Int("batch", 1000, "loadgen -batch")
	sources := fs.String("sources", "127.0.0.1-127.0.0.8", "loadgen -sources")
	hold := fs.Duration("hold", 5*time.Second, "loadgen -hold: how long the connections are held before the server's RSS is read")
	list := slices.Concat(benchrun.EchoVariants, []string{broadcastGnet}, benchrun.Floors, []string{benchrun.Node})
	list = append(list, sioTargets...)
	variants := fs.String("variants", strings.Join(list, ","), "comma-separated `list` of targets: "+strings.Join(list, ", "))
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{n: *n, batch: *batch, sources: *sources, hold: *hold}
	if o.n < 0 || o.batch < 1 || o.hold < 0 {
		return options{}, errors.New("invalid -n, -batch or -hold: want -n >= 0, -batch >= 1, -hold >= 0")
	}
	var err error
	if o.variants, err = benchrun.Pick("variants", *variants, list); err != nil {
		return options{}, err
	}
	return o, nil
}

// row is one target's run.
type row struct {
	variant string
	n       int
	limit   string // what bounded n
	rep     *conns.Report
	threads int // the most the server ran at once during the run
	err     error
}

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	_, hard, err := procfs.OpenFilesLimits(procfs.Self)
	if err != nil {
		return fmt.Errorf("bench-conns sizes each run by the open-files limit, which it cannot read here: %w", err)
	}
	// loadgen is a Go program: it starts with the soft limit and raises it
	// to the hard one.
	clientAllows := min(hard, 1<<30) - reserve

	machine := benchrun.StartMachine()
	var rows []row
	for _, v := range o.variants {
		// -pprof for POST /debug/freeosmemory: the second RSS reading.
		start := func() (*harness.Process, string, string, error) {
			return benchrun.StartEchoTarget(ctx, stderr, v, "-pprof")
		}
		if isSio(v) {
			start = func() (*harness.Process, string, string, error) { return startSio(ctx, stderr, v) }
		}
		p, url, admin, err := start()
		if err != nil {
			return err
		}
		r := row{variant: v}
		r.n, r.limit, err = count(o, p.PID(), clientAllows)
		if err != nil {
			r.err = err
		} else {
			stop := watchThreads(p.PID(), &r.threads)
			r.rep, r.err = measure(ctx, stderr, o, bins.Loadgen, url, admin, p.PID(), r.n)
			stop()
		}
		if r.err != nil {
			fmt.Fprintf(stderr, "  %s: %v\n", v, r.err)
		}
		rows = append(rows, r)
		p.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	writeTable(stdout, o, rows)
	writeFloorRatios(stdout, rows)
	fmt.Fprintf(stdout, "\n%s\n", machine.Summary())
	return nil
}

// count is the number of connections for one target: the smaller of the
// two processes' open-files budgets, or -n. The same rule for every
// target, so that their counts differ only by the descriptors each has
// open at start.
func count(o options, pid, clientAllows int) (int, string, error) {
	soft, err := procfs.OpenFilesSoft(pid)
	if err != nil {
		return 0, "", err
	}
	open, err := procfs.OpenFileCount(pid)
	if err != nil {
		return 0, "", err
	}
	// A batch's worth of headroom: echo-gnet accepts with net and hands
	// each connection to gnet with Engine.Register, which duplicates the
	// descriptor, so a connection being accepted briefly takes two. At the
	// bare limit some upgrades then fail (the client reads EOF).
	serverAllows := soft - open - reserve - o.batch
	n, limit := clientAllows, fmt.Sprintf("loadgen's open-files limit (%d)", clientAllows+reserve)
	if serverAllows < n {
		n, limit = serverAllows, fmt.Sprintf("the server's open-files limit (%d, %d open)", soft, open)
	}
	if o.n > 0 && o.n < n {
		n, limit = o.n, "-n"
	}
	if n < 1 {
		return 0, "", fmt.Errorf("no room for connections: %s", limit)
	}
	return n, limit, nil
}

// watchThreads keeps in *most the largest thread count of process pid,
// read from /proc every 200 ms, until the returned stop is called.
func watchThreads(pid int, most *int) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if n, err := threads(pid); err == nil {
				*most = max(*most, n)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// threads is the Threads line of /proc/PID/status.
func threads(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no Threads line")
}

// measure runs loadgen conns once; the server's RSS comes from /proc (-pid)
// for every target alike.
func measure(ctx context.Context, stderr io.Writer, o options, loadgen, url, admin string, pid, n int) (*conns.Report, error) {
	fmt.Fprintf(stderr, "  %d connections\n", n)
	ctx, cancel := context.WithTimeout(ctx, o.hold+10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, loadgen, "conns", "-url", url, "-n", strconv.Itoa(n), "-batch", strconv.Itoa(o.batch),
		"-hold", o.hold.String(), "-admin", admin, "-pid", strconv.Itoa(pid), "-json", "-")
	if !strings.Contains(url, sioPath) {
		// The Socket.IO client binds no source address; one address's
		// ephemeral ports are more than the open-files limit allows.
		cmd.Args = append(cmd.Args, "-sources", o.sources)
	}
	if admin != "" { // a knowngood target: also the RSS once its free memory is returned
		cmd.Args = append(cmd.Args, "-free-os-memory")
	}
	rep, err := benchrun.LoadgenReport[conns.Report](cmd)
	if err != nil {
		return nil, err
	}
	if rep.Server == nil || rep.Server.BytesPerConnection == nil {
		return rep, fmt.Errorf("no server RSS: %s", rep.ServerError)
	}
	return rep, nil
}

func writeTable(w io.Writer, o options, rows []row) {
	fmt.Fprintf(w, "\nIdle connections with loadgen conns: batches of %d from %s, held %s; server RSS from /proc before the first dial and at the end of the hold (the goals are on this), and then once more after the target collected its garbage and returned free memory to the OS (-free-os-memory; knowngood targets only).\n\n", o.batch, o.sources, o.hold)
	fmt.Fprintln(w, "| target | connections | held | failed | establish s | conn/s | server RSS before MiB | after MiB | KiB per connection | goal KiB | met | after freeing MiB | KiB per connection after freeing | threads (most) | bounded by |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
	for _, r := range rows {
		name := r.variant
		switch name {
		case node:
			name = "node ws"
		}
		if lib, ok := benchrun.FloorLibrary(name); ok {
			name = fmt.Sprintf("%s floor (minimal %s echo)", lib, lib)
		}
		if r.rep == nil || r.rep.Server == nil || r.rep.Server.BytesPerConnection == nil {
			fmt.Fprintf(w, "| %s | %d | error: %v | | | | | | | | | | | | |\n", name, r.n, r.err)
			continue
		}
		rep, s := r.rep, r.rep.Server
		kib := *rep.KiBPerConnection()
		goal, met := "-", "-"
		if g, ok := idleGoal(libraryOf(r.variant)); ok && !isSio(r.variant) {
			goal = strconv.FormatFloat(g, 'f', 0, 64)
			met = benchrun.Met(kib <= g)
		}
		if r.variant == sioNativeGnet {
			goal, met = strconv.Itoa(sioGoal), benchrun.Met(kib <= sioGoal)
		}
		rate := 0.0
		if rep.EstablishSeconds > 0 {
			rate = float64(rep.Established) / rep.EstablishSeconds
		}
		freedMiB, freedKiB := "-", "-"
		if s.RSSAfterFree != nil {
			freedMiB = strconv.FormatFloat(*s.RSSAfterFree/(1<<20), 'f', 1, 64)
			freedKiB = strconv.FormatFloat(*s.BytesPerConnectionAfterFree/1024, 'f', 2, 64)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.2f | %.0f | %.1f | %.1f | %.2f | %s | %s | %s | %s | %d | %s |\n",
			name, r.n, rep.Held, rep.Failed, rep.EstablishSeconds, rate, *s.RSSBefore/(1<<20), *s.RSSAfter/(1<<20), kib, goal, met, freedMiB, freedKiB, r.threads, r.limit)
	}
}

// writeFloorRatios compares each target with its library's floor of the
// same run: its KiB per idle connection over the floor's, against the
// registry's Goals.IdleOfFloor (0: reported, no goal). What knowngood keeps
// beyond gnet's own state (its accounting, the keepalive, the accept that
// survives EMFILE) must stay small; nbio's targets sit on net/http, its
// floor on nbio's own poller, so theirs is the price of that front.
func writeFloorRatios(w io.Writer, rows []row) {
	for _, lib := range variants.WebSocketLibraries() {
		if lib.Floor {
			writeFloorRatio(w, rows, lib)
		}
	}
}

func writeFloorRatio(w io.Writer, rows []row, lib variants.WebSocketLibrary) {
	name := benchrun.FloorOf(lib.Library)
	var floor *row
	for i := range rows {
		if rows[i].variant == name && rows[i].rep != nil && rows[i].rep.KiBPerConnection() != nil {
			floor = &rows[i]
		}
	}
	if floor == nil {
		return
	}
	fk := *floor.rep.KiBPerConnection()
	goal, judge := lib.Goals.IdleOfFloor, lib.Goals.IdleOfFloor > 0
	goalCell, says := "-", "no goal, reported"
	if judge {
		goalCell = fmt.Sprintf("%.1fx", goal)
		says = "goal at most " + goalCell
	}
	fmt.Fprintf(w, "\nAgainst the %s floor of this run (%.2f KiB per connection at %d): %s.\n\n", lib.Library, fk, floor.n, says)
	fmt.Fprintf(w, "| target | connections | KiB per connection | x %s floor | goal | met |\n", lib.Library)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
	for _, r := range rows {
		if libraryOf(r.variant) != lib.Library {
			continue
		}
		if r.rep == nil || r.rep.KiBPerConnection() == nil || fk <= 0 {
			fmt.Fprintf(w, "| %s | %d | - | - | %s | not measured |\n", r.variant, r.n, goalCell)
			continue
		}
		kib := *r.rep.KiBPerConnection()
		x := kib / fk
		met := "-"
		if judge {
			met = benchrun.Met(x <= goal)
		}
		fmt.Fprintf(w, "| %s | %d | %.2f | %.2fx | %s | %s |\n", r.variant, r.n, kib, x, goalCell, met)
	}
}

// libraryOf is the library of a knowngood variant; "" for Node.
func libraryOf(variant string) variants.Library {
	v, _ := variants.Lookup(variant)
	return v.Library
}

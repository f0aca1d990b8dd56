// Command broadcast is the fan-out benchmark (make bench-broadcast): for
// each broadcast variant and each subscriber count it starts a fresh target
// with the timed push (-push-interval 100ms -push-size 100), runs `loadgen
// broadcast -push` (the push's fan-out latency and loss) and then `loadgen
// broadcast` with 10 senders (broadcast latency, loss, listenerCount), and
// prints one Markdown table with the fan-out goals.
//
//	go run ./scripts/bench/broadcast [-subscribers 1000,10000] [-senders 10] [-rate 10]
//	                                 [-duration 10s] [-variants broadcast-gorilla,broadcast-coder,broadcast-gnet]
//
// Run it from the repository root. Everything listens on 127.0.0.1; every
// process it starts is stopped before it returns.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/broadcast"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/servers/variants"
)

var broadcastVariants = variants.NamesOf(variants.ByFamily(variants.Broadcast))

// goals: the push fan-out p99 at 10,000 subscribers, in ms.
// They are by library, since the fan-out is the library's writes.
var goals = map[variants.Library]float64{variants.Gnet: 50, variants.Gorilla: 100, variants.Coder: 100}

const goalSubscribers = 10000

type options struct {
	subscribers []int
	senders     int
	rate        int
	duration    time.Duration
	sources     string
	variants    []string
}

func main() { benchrun.Main("bench-broadcast", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-broadcast", flag.ContinueOnError)
	subs := fs.String("subscribers", "1000,10000", "comma-separated subscriber `counts`")
	senders := fs.Int("senders", 10, "loadgen -senders in broadcast mode")
	rate := fs.Int("rate", 10, "loadgen -rate in broadcast mode: broadcasts per second, all senders together")
	duration := fs.Duration("duration", 10*time.Second, "each measured window")
	sources := fs.String("sources", "127.0.0.1-127.0.0.8", "loadgen -sources")
	list := fs.String("variants", strings.Join(broadcastVariants, ","), "comma-separated `list` of variants")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{senders: *senders, rate: *rate, duration: *duration, sources: *sources}
	var err error
	if o.subscribers, err = benchrun.Counts("subscribers", *subs); err != nil {
		return options{}, err
	}
	if o.variants, err = benchrun.Pick("variants", *list, broadcastVariants); err != nil {
		return options{}, err
	}
	if o.senders < 1 || o.rate < 1 || o.duration <= 0 {
		return options{}, errors.New("invalid -senders, -rate or -duration: want positive values")
	}
	return o, nil
}

// row is one loadgen run.
type row struct {
	variant string
	n       int
	mode    string
	rep     *broadcast.Report
	err     error
}

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	var rows []row
	for _, v := range o.variants {
		for _, n := range o.subscribers {
			p, err := benchrun.Start(ctx, stderr, nil, "-variant", v, "-push-interval", "100ms", "-push-size", "100")
			if err != nil {
				return err
			}
			url, admin := "ws://"+p.Addr+"/", p.AdminURL()
			for _, mode := range []string{"push", "broadcast"} {
				r := row{variant: v, n: n, mode: mode}
				r.rep, r.err = measure(ctx, stderr, o, bins.Loadgen, url, admin, n, mode)
				if r.err != nil {
					fmt.Fprintf(stderr, "  %s %d %s: %v\n", v, n, mode, r.err)
				}
				rows = append(rows, r)
			}
			p.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	writeTable(stdout, o, rows)
	return nil
}

func measure(ctx context.Context, stderr io.Writer, o options, loadgen, url, admin string, n int, mode string) (*broadcast.Report, error) {
	fmt.Fprintf(stderr, "  %d subscribers, %s\n", n, mode)
	ctx, cancel := context.WithTimeout(ctx, o.duration+5*time.Minute)
	defer cancel()
	args := []string{"broadcast", "-url", url, "-admin", admin, "-subscribers", strconv.Itoa(n), "-sources", o.sources,
		"-duration", o.duration.String(), "-json", "-"}
	if mode == "push" {
		args = append(args, "-push")
	} else {
		args = append(args, "-senders", strconv.Itoa(o.senders), "-rate", strconv.Itoa(o.rate))
	}
	cmd := exec.CommandContext(ctx, loadgen, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := harness.LoadgenRan(cmd.Run(), out.Bytes()); err != nil {
		return nil, fmt.Errorf("loadgen: %v: %s", err, benchrun.LastLine(errOut.String()))
	}
	var rep broadcast.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("loadgen output: %v", err)
	}
	return &rep, nil
}

func writeTable(w io.Writer, o options, rows []row) {
	fmt.Fprintf(w, "\nFan-out with loadgen broadcast, %s windows: push = the server's timed push (every 100 ms, 100-byte payload) to every subscriber; broadcast = %d senders, %d broadcasts/s in total, each to every subscriber and sender. Latency from the send time in the message to its arrival, over every delivery (one HdrHistogram).\n\n",
		o.duration, o.senders, o.rate)
	fmt.Fprintln(w, "| variant | subscribers | mode | deliveries | lost | dups | p50 ms | p99 ms | max ms | server CPU s | client CPU s | server RSS MiB | p99 goal ms | met |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		if r.rep == nil {
			fmt.Fprintf(w, "| %s | %d | %s | error: %v | | | | | | | | | | |\n", r.variant, r.n, r.mode, r.err)
			continue
		}
		rep := r.rep
		p50, p99, mx := "-", "-", "-"
		if l := rep.Latency; l != nil {
			p50, p99, mx = ms(l.P50), ms(l.P99), ms(l.Max)
		}
		cpu, rss := "-", "-"
		if s := rep.Server; s != nil {
			if s.CPUSeconds != nil {
				cpu = strconv.FormatFloat(*s.CPUSeconds, 'f', 2, 64)
			}
			if s.ResidentBytes != nil {
				rss = strconv.FormatFloat(*s.ResidentBytes/(1<<20), 'f', 0, 64)
			}
		}
		goal, met := "-", "-"
		if g, ok := goals[libraryOf(r.variant)]; ok && r.mode == "push" && r.n == goalSubscribers && rep.Latency != nil {
			goal, met = strconv.FormatFloat(g, 'f', 0, 64), "yes"
			if rep.Latency.P99*1000 > g || rep.Lost > 0 {
				met = "**no**"
			}
		}
		lost := strconv.FormatUint(rep.Lost, 10)
		if rep.Lost > 0 {
			lost = "**" + lost + "**"
		}
		fmt.Fprintf(w, "| %s | %d | %s | %d | %s | %d | %s | %s | %s | %s | %.2f | %s | %s | %s |\n",
			r.variant, rep.Connected, r.mode, rep.Received, lost, rep.Duplicates, p50, p99, mx, cpu, rep.ClientCPUSeconds, rss, goal, met)
	}
}

func ms(s float64) string { return strconv.FormatFloat(s*1000, 'f', 1, 64) }

// libraryOf is the library of a variant that Pick has checked.
func libraryOf(name string) variants.Library {
	v, _ := variants.Lookup(name)
	return v.Library
}

// Package reconcile is `loadgen reconcile`: the verdicts of loadgen watch
// for a run that was not watched, from a /stats snapshot saved before it
// and the counts the tool printed, typed after the run.
//
//	curl -s http://127.0.0.1:9100/stats > before.json
//	(run the load tool)
//	loadgen reconcile -admin http://127.0.0.1:9100 -before before.json -client-attempts 100 -client-ok 39
//
// The snapshot after the run is read from -admin once the target has seen
// the run's connections close (as many active as in -before, or after 5
// s), or from -after (a file saved the same way). A target of several replicas takes one snapshot
// file per admin listener, in the order of -admin, separated by commas.
package reconcile

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/clientfigs"
	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/statsclient"
	"github.com/knowngood/knowngood/loadgen/watch"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Config is one reconciliation.
type Config struct {
	Admin         string // "" only with After
	Before, After []string
	Attempts, OK  int   // -1: not given
	Sent, Recv    int64 // -1: not given
	Deadline      time.Duration
	JSON          string
}

// ParseFlags parses the flags.
func ParseFlags(args []string) (Config, error) {
	var cfg Config
	var before, after string
	fs := newFlagSet(&cfg, &before, &after)
	if _, err := flagset.Parse(fs, args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q: loadgen reconcile takes only flags", fs.Arg(0))
	}
	if before == "" {
		return Config{}, errors.New("flag -before is required: the /stats saved before the run (curl -s http://HOST:9100/stats > before.json)")
	}
	if cfg.Admin == "" && after == "" {
		return Config{}, errors.New("flag -admin is required (the target's admin listener, for the /stats after the run), unless -after gives it")
	}
	admins := []string{""}
	if cfg.Admin != "" {
		var err error
		if strings.Contains(cfg.Admin, ",") {
			admins, err = replicas.Split(cfg.Admin)
		} else {
			var a string
			a, err = statsclient.AdminURL(cfg.Admin, true, "")
			admins = []string{a}
		}
		if err != nil {
			return Config{}, err
		}
		cfg.Admin = strings.Join(admins, ",")
	}
	cfg.Before = strings.Split(before, ",")
	if after != "" {
		cfg.After = strings.Split(after, ",")
	}
	if cfg.Admin != "" && len(cfg.Before) != len(admins) {
		return Config{}, fmt.Errorf("flag -before names %d files for %d admin listeners: want one each, in the order of -admin", len(cfg.Before), len(admins))
	}
	if cfg.After != nil && len(cfg.After) != len(cfg.Before) {
		return Config{}, fmt.Errorf("flag -after names %d files, -before %d: want as many", len(cfg.After), len(cfg.Before))
	}
	if cfg.Attempts < 0 && cfg.OK < 0 && cfg.Sent < 0 && cfg.Recv < 0 {
		return Config{}, errors.New("no client counts: give what the tool printed, -client-attempts, -client-ok, -client-sent, -client-received (any of them)")
	}
	if cfg.Attempts >= 0 && cfg.OK > cfg.Attempts {
		return Config{}, fmt.Errorf("flag -client-ok %d is more than -client-attempts %d", cfg.OK, cfg.Attempts)
	}
	return cfg, nil
}

// Usage prints the flags and their defaults.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: loadgen reconcile -admin http://HOST:PORT -before stats.json [-after stats.json] -client-attempts N -client-ok N [-client-sent N] [-client-received N]")
	var before, after string
	fs := newFlagSet(&Config{}, &before, &after)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func newFlagSet(cfg *Config, before, after *string) *flag.FlagSet {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.Admin, "admin", "", "`URL` of the target's admin listener, http://HOST:PORT, read for the /stats after the run and the configuration"+scenario.AdminMore)
	fs.StringVar(before, "before", "", "the target's /stats saved before the run, as `FILE` (of several replicas, one file each, comma-separated in the order of -admin) (required)")
	fs.StringVar(after, "after", "", "the /stats saved after the run, as `FILE`(s); default: read from -admin now")
	flagset.Int(fs, &cfg.Attempts, "client-attempts", -1, -1, 100000000, "the tool's connection attempts, as it printed them (`N`; -1 = not given)")
	flagset.Int(fs, &cfg.OK, "client-ok", -1, -1, 100000000, "the tool's successful connections, as it printed them (`N`; -1 = not given)")
	cfg.Sent, cfg.Recv = -1, -1
	fs.Func("client-sent", "messages the tool says it sent (`N`)", int64Flag(&cfg.Sent))
	fs.Func("client-received", "messages the tool says it received (`N`)", int64Flag(&cfg.Recv))
	flagset.Duration(fs, &cfg.Deadline, "deadline", 0, true, "the tool's per-connection deadline, for the verdicts (0 = unknown)")
	fs.StringVar(&cfg.JSON, "json", "", "also write the report as one JSON object to `FILE` (- = stdout; the table then goes to stderr)")
	return fs
}

func int64Flag(p *int64) func(string) error {
	return func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return errors.New("want a count, 0 or more")
		}
		*p = n
		return nil
	}
}

// Run reads the snapshots and judges.
func Run(ctx context.Context, cfg Config, notes io.Writer) (*watch.Report, error) {
	admins := strings.Split(cfg.Admin, ",")
	before, err := readFiles("-before", cfg.Before, admins)
	if err != nil {
		return nil, err
	}
	target := scenario.Open(ctx, cfg.Admin)
	defer target.Close()
	var after *scenario.Snapshot
	if cfg.After != nil {
		after, err = readFiles("-after", cfg.After, admins)
		if err != nil {
			return nil, err
		}
	} else {
		// Once the target has seen the run's connections go (as many
		// active as before it), or after watch's settle time.
		after = target.Settled(ctx, before, watch.DefaultSettle)
		if after == nil || after.Err != nil {
			if after == nil {
				after = &scenario.Snapshot{Err: errors.New("no admin listener")}
			}
			return nil, fmt.Errorf("no /stats from %s: %w", cfg.Admin, after.Err)
		}
	}
	b, a := scenario.Pair(before, after)
	if a.Err != nil {
		return nil, a.Err
	}
	if b.Stats.Variant != a.Stats.Variant || a.Stats.UptimeSeconds < b.Stats.UptimeSeconds {
		return nil, fmt.Errorf("the snapshots are not of one process: before %s up %.0fs, after %s up %.0fs (restarted in between?)",
			b.Stats.Variant, b.Stats.UptimeSeconds, a.Stats.Variant, a.Stats.UptimeSeconds)
	}
	rep := &watch.Report{Admin: cfg.Admin, Variant: a.Stats.Variant, Seconds: a.Stats.UptimeSeconds - b.Stats.UptimeSeconds}
	rep.Server = protocol.Diff(b.Stats.Stats, a.Stats.Stats)
	figs := clientfigs.Figures{Source: "typed after the run", Attempts: cfg.Attempts, OK: cfg.OK, Sent: cfg.Sent, Received: cfg.Recv}
	rep.Judge(figs, target.Config, scenario.Parts(before, after), cfg.Deadline)
	return rep, nil
}

// readFiles reads saved /stats documents, one per admin listener.
func readFiles(flagName string, paths, admins []string) (*scenario.Snapshot, error) {
	s := &scenario.Snapshot{}
	for i, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("flag %s: %w", flagName, err)
		}
		stats, err := protocol.DecodeStats(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("flag %s %s: not a /stats document: %w", flagName, path, err)
		}
		admin := path
		if i < len(admins) && admins[i] != "" {
			admin = admins[i]
		}
		s.Reads = append(s.Reads, replicas.Read{Admin: admin, Snapshot: statsclient.Snapshot{Stats: stats}})
	}
	s.Stats, s.Err = replicas.Sum(s.Reads)
	return s, nil
}

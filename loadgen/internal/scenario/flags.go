// Package scenario is the skeleton every loadgen scenario fills in: the
// flags they share (-url, -admin, -json, -csv, -html, and -ca and -insecure
// for a target in TLS), the run around the
// scenario's own work (read the target's /stats before, do the work, read
// /stats after, take the difference and judge it with the client's own
// counts, loadgen/internal/verdict), and the subcommand that parses the
// flags, runs, prints the report and writes its files.
//
// A scenario supplies its own flags (beside Common's) and a Scenario
// (Prepare, Load, Finish); the skeleton calls it between the reads:
//
//	rep, err := scenario.Run(ctx, scenario.Options{Admin: cfg.Admin}, &myRun{cfg: cfg})
//
// and loadgen's main lists it with NewCommand. The subcommand's exit
// status says whether the run passed: the report's Outcome (nothing
// succeeded, a verdict's loss) and the -threshold expressions
// (loadgen/internal/threshold) fail it; a target that takes no connection
// is told apart (ExitUnreachable).
package scenario

import (
	"errors"
	"flag"
	"io"
	"strings"

	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/statsclient"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// Common is the flags every scenario has.
type Common struct {
	URL   string // the target, in the scenario's form
	Admin string // base URL of the target's admin listener; "" for none
	JSON  string // write the report as JSON to this file; "-" is stdout
	CSV   string // write the per-second samples as CSV to this file
	HTML  string // write the report as an HTML page to this file
	Shard Shard  // -shard I/N: this process's share of the clients
	TLS   TLS    // -ca, -insecure: a target in TLS

	// -threshold EXPR, repeatable.
	Thresholds
}

// Thresholds are a configuration's -threshold expressions: the run fails
// (exit 1) when one does not hold. Embedded in a configuration, they give
// it ThresholdList, which the subcommand reads.
type Thresholds struct {
	list *[]threshold.Threshold // a pointer keeps a configuration comparable; nil for none
}

// ThresholdList is the expressions given, in their order.
func (t Thresholds) ThresholdList() []threshold.Threshold {
	if t.list == nil {
		return nil
	}
	return *t.list
}

// Flag defines -threshold on fs, each expression naming one of metrics.
func (t *Thresholds) Flag(fs *flag.FlagSet, metrics []threshold.Metric) {
	fs.Func("threshold", "pass/fail criterion `EXPR`, repeatable: METRIC OP VALUE, OP one of < <= > >= == !=, "+
		"e.g. 'p99<50ms' 'success>=99.9%' 'lost==0'; the run fails (exit 1) when one does not hold. The metrics: "+describe(metrics),
		func(v string) error {
			th, err := threshold.Parse(v, metrics)
			if err != nil {
				return err
			}
			if t.list == nil {
				t.list = new([]threshold.Threshold)
			}
			*t.list = append(*t.list, th)
			return nil
		})
}

// Words are what a scenario says of its target in -h.
type Words struct {
	DefaultURL string
	URL        string // -url's usage
	// Admin is -admin's usage; that it takes several (one per replica)
	// and the default (the target's host, port
	// statsclient.DefaultAdminPort) are said after it.
	Admin string
	// Metrics are what -threshold may name.
	Metrics []threshold.Metric
}

// AdminMore is what every scenario's -admin says after its own words
// (Words.Admin ends with it).
const AdminMore = "; for a target of several replicas, each one's, separated by commas, or dns+http://NAME:PORT for every address NAME resolves to when the run starts (a Kubernetes headless Service): the server's view is then their sum, each replica's part shown beside it"

// NewFlagSet is an empty flag set for scenario name: errors are returned
// and printed by the caller, on one line.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// Register defines the common flags on fs.
func (c *Common) Register(fs *flag.FlagSet, w Words) {
	fs.StringVar(&c.URL, "url", w.DefaultURL, w.URL)
	fs.StringVar(&c.Admin, "admin", "", w.Admin+" (default: the target's host, port "+statsclient.DefaultAdminPort+"; '' = none)")
	fs.StringVar(&c.JSON, "json", "", "also write the report as one JSON object to `FILE` (- = stdout; the table then goes to stderr)")
	fs.StringVar(&c.CSV, "csv", "", "also write the per-second samples to `FILE` as CSV: a header row (second,count,errors,p50_ms,p99_ms,max_ms), then one row a second")
	fs.Func("shard", ShardUsage, func(v string) error {
		sh, err := ParseShard(v)
		if err != nil {
			return errors.New("want I/N, 1 <= I <= N (e.g. 2/3)")
		}
		c.Shard = sh
		return nil
	})
	c.TLS.Register(fs)
	c.Thresholds.Flag(fs, w.Metrics)
	fs.StringVar(&c.HTML, "html", "", "also write the report to `FILE` as one self-contained HTML page (inline SVG charts, opens offline): the table, client vs server, throughput and latency per second, the latency distribution")
}

// ResolveAdmin fills in -admin once the target's host is known (set: the
// flags given on the command line); the error names the flag, on one line.
func (c *Common) ResolveAdmin(set map[string]bool, targetHost string) error {
	if strings.Contains(c.Admin, ",") {
		admins, err := replicas.Split(c.Admin)
		c.Admin = strings.Join(admins, ",")
		return err
	}
	admin, err := statsclient.AdminURL(c.Admin, set["admin"], targetHost)
	c.Admin = admin
	return err
}

// describe lists the metrics with what each is and its form, for -h.
func describe(metrics []threshold.Metric) string {
	var b strings.Builder
	for i, m := range metrics {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(m.Name)
		switch m.Kind {
		case threshold.Share:
			b.WriteString(" (%)")
		case threshold.Duration:
			b.WriteString(" (duration)")
		}
		if m.Help != "" {
			b.WriteString(": " + m.Help)
		}
	}
	return b.String()
}

// TargetURL is -url, for the check of whether the target could be
// reached.
func (c Common) TargetURL() string { return c.URL }

// Files are the report's files: -json, -csv and -html.
func (c Common) Files() (json, csv, html string) { return c.JSON, c.CSV, c.HTML }

// Parse parses args into a C with the flag set that newFlagSet defines
// over it, then has normalize check what the flags cannot check alone
// (set: the flags given). A bad value gives a one-line error that names
// the flag and the accepted form; -h gives flag.ErrHelp.
func Parse[C any](args []string, newFlagSet func(*C) *flag.FlagSet, normalize func(c *C, set map[string]bool) error) (C, error) {
	var cfg C
	set, err := flagset.Parse(newFlagSet(&cfg), args)
	if err != nil {
		var zero C
		return zero, err
	}
	if err := normalize(&cfg, set); err != nil {
		var zero C
		return zero, err
	}
	return cfg, nil
}

// Usage prints "usage: loadgen SCENARIO [flags]" and the flags that
// newFlagSet defines, with their defaults.
func Usage[C any](w io.Writer, newFlagSet func(*C) *flag.FlagSet) {
	var cfg C
	flagset.Usage(w, newFlagSet(&cfg))
	io.WriteString(w, ExitHelp)
}

// Flags are a scenario's flags: the common ones, as Words describe them,
// then its own, which Own defines on the scenario's configuration; Normalize
// checks what the flags cannot check alone (set: the flags given).
type Flags[C any, P interface {
	*C
	Register(fs *flag.FlagSet, w Words)
}] struct {
	Name string
	Words
	Own       func(fs *flag.FlagSet, cfg P)
	Normalize func(cfg P, set map[string]bool) error
}

// Parse parses args as Parse does, with f's flags.
func (f Flags[C, P]) Parse(args []string) (C, error) {
	return Parse(args, f.flagSet, func(c *C, set map[string]bool) error { return f.Normalize(P(c), set) })
}

// Usage prints f's flags as Usage does.
func (f Flags[C, P]) Usage(w io.Writer) { Usage(w, f.flagSet) }

func (f Flags[C, P]) flagSet(c *C) *flag.FlagSet {
	fs := NewFlagSet(f.Name)
	P(c).Register(fs, f.Words)
	f.Own(fs, P(c))
	return fs
}

// ExitHelp is the exit statuses, for the end of -h.
const ExitHelp = `exit status:
  0    pass
  1    the run failed: nothing succeeded, a verdict found a loss (client or server side),
       a -threshold was crossed (loadgen watch: or the command failed); or it could not run
  2    bad flags
  3    could not reach the target: no connection was established and the target's
       address takes no TCP connection (refused, unknown host, no route, no answer);
       loadgen watch: no /stats from -admin before the command
  130  interrupted (after the partial report)
`

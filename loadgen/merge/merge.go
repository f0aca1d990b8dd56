// Package merge is `loadgen merge`: it makes one report of a run that
// several loadgen processes made together, each with -shard I/N and -json
// FILE, from their reports. The client's figures add up, the latency
// distributions merge exactly (the shards' reports carry their
// HdrHistogram buckets), and the server's view is taken once over every
// shard's window: for each replica, the earliest /stats read before any
// shard and the latest read after. The output is what a single run
// prints: the table, the verdicts, and -json, -csv, -html.
//
//	loadgen merge -json all.json shard1.json shard2.json shard3.json
//
// With - it reads the reports from standard input instead, one JSON object
// a line, passing over the lines that are not JSON: the shards' tables,
// where their output comes mixed, as `kubectl logs` gives a Job's pods'.
package merge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/knowngood/knowngood/loadgen/broadcast"
	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/loadgen/echo"
	"github.com/knowngood/knowngood/loadgen/handshake"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
)

// Config is one merge.
type Config struct {
	Reports         []string  // the shards' -json reports; - for Stdin's
	Stdin           io.Reader // where - reads from (os.Stdin)
	JSON, CSV, HTML string
}

// Files are the merged report's files.
func (c Config) Files() scenario.Files { return scenario.Files{JSON: c.JSON, CSV: c.CSV, HTML: c.HTML} }

// mergers are the scenarios whose reports merge.
var mergers = map[string]func(names []string, data [][]byte) (scenario.Report, error){
	"echo":      func(names []string, data [][]byte) (scenario.Report, error) { return echo.Merge(names, data) },
	"handshake": func(names []string, data [][]byte) (scenario.Report, error) { return handshake.Merge(names, data) },
	"conns":     func(names []string, data [][]byte) (scenario.Report, error) { return conns.Merge(names, data) },
	"broadcast": func(names []string, data [][]byte) (scenario.Report, error) { return broadcast.Merge(names, data) },
}

func newFlagSet(cfg *Config) *flag.FlagSet {
	fs := scenario.NewFlagSet("merge")
	fs.StringVar(&cfg.JSON, "json", "", "also write the merged report as one JSON object to `FILE` (- = stdout; the table then goes to stderr)")
	fs.StringVar(&cfg.CSV, "csv", "", "also write the merged per-second samples to `FILE` as CSV")
	fs.StringVar(&cfg.HTML, "html", "", "also write the merged report to `FILE` as one self-contained HTML page")
	return fs
}

// ParseFlags parses `[flags] SHARD.json...`.
func ParseFlags(args []string) (Config, error) {
	var cfg Config
	fs := newFlagSet(&cfg)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	cfg.Reports, cfg.Stdin = fs.Args(), os.Stdin
	if len(cfg.Reports) == 0 {
		return Config{}, errors.New("no reports: want loadgen merge [flags] SHARD.json... (each shard's -json report)")
	}
	return cfg, nil
}

// Usage prints the usage and the flags.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: loadgen merge [flags] SHARD.json... (the -json reports of every shard of one run, each made with -shard I/N;")
	fmt.Fprintln(w, "       - reads them from standard input, one a line, passing over the lines that are not JSON: kubectl logs ... | loadgen merge -)")
	fs := newFlagSet(&Config{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// Run reads the reports and merges them; the error says, on one line,
// why they do not make one run.
func Run(_ context.Context, cfg Config, _ io.Writer) (scenario.Report, error) {
	names, data, err := read(cfg.Reports, cfg.Stdin)
	if err != nil {
		return nil, err
	}
	name := ""
	for i, path := range names {
		b := data[i]
		var head struct {
			Shard *scenario.ShardPart `json:"shard"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return nil, fmt.Errorf("%s: not a loadgen -json report: %v", path, err)
		}
		if head.Shard == nil {
			return nil, fmt.Errorf("%s is not a sharded report: run each shard with -shard I/N and -json FILE", path)
		}
		if name == "" {
			name = head.Shard.Scenario
		} else if head.Shard.Scenario != name {
			return nil, fmt.Errorf("mixed scenarios: %s is %s, %s is %s", names[0], name, path, head.Shard.Scenario)
		}
	}
	m, ok := mergers[name]
	if !ok {
		return nil, fmt.Errorf("%s reports do not merge: they are not a load scenario's", name)
	}
	return m(names, data)
}

// maxReport bounds one report's line on standard input: a report carries
// its latency buckets and per-second samples, some hundreds of KiB for a
// long run.
const maxReport = 64 << 20

// read is each report's name and content: a file's path, or for - each
// JSON line of standard input, named "stdin:LINE".
func read(paths []string, stdin io.Reader) (names []string, data [][]byte, err error) {
	for _, path := range paths {
		if path != "-" {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, nil, err
			}
			names, data = append(names, path), append(data, b)
			continue
		}
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 0, 64<<10), maxReport)
		found := 0
		for line := 1; sc.Scan(); line++ {
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 || b[0] != '{' {
				continue
			}
			names, data = append(names, fmt.Sprintf("stdin:%d", line)), append(data, bytes.Clone(b))
			found++
		}
		if err := sc.Err(); err != nil {
			return nil, nil, fmt.Errorf("standard input: %w", err)
		}
		if found == 0 {
			return nil, nil, errors.New("standard input has no report: want each shard's -json - output, one JSON object a line")
		}
	}
	return names, data, nil
}

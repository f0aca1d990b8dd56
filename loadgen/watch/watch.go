// Package watch is `loadgen watch`: reconciliation around any load tool.
// It snapshots the target's /stats (and its configuration from /health),
// runs the tool with its output passing through, waits for the target to
// see the tool's connections go, snapshots again, and prints the server's
// view of exactly what the tool did: handshakes by result and their
// latency, messages, disconnects, drops, faults, CPU. Given the tool's own
// counts (-client-attempts, -client-ok, and for messages -client-sent,
// -client-received), it adds the verdicts: which failures were the
// client's and which the server's.
//
//	loadgen watch -admin http://127.0.0.1:9100 -client-attempts 100 -client-ok 39 -- node client.mjs --n 100
package watch

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

	"knowngood/loadgen/internal/flagset"
	"knowngood/loadgen/internal/replicas"
	"knowngood/loadgen/internal/scenario"
	"knowngood/loadgen/internal/sidebyside"
	"knowngood/loadgen/internal/statsclient"
	"knowngood/loadgen/internal/verdict"
	"knowngood/shared/protocol"
)

// DefaultSettle bounds the wait, after the command, for the target to see
// its connections close.
const DefaultSettle = 5 * time.Second

// Config is one watched run.
type Config struct {
	Admin          string
	Command        []string
	Attempts, OK   int           // the tool's own counts; -1 = not given
	Sent, Received int64         // -1 = not given
	Deadline       time.Duration // the tool's per-connection deadline, for the verdicts; 0 = unknown
	Settle         time.Duration
	JSON           string
	scenario.Thresholds
	// Stdout and Stderr receive the command's output; os.Stdout and
	// os.Stderr unless a test sets them.
	Stdout, Stderr io.Writer
}

// ParseFlags parses `[flags] -- COMMAND [ARGS...]`.
func ParseFlags(args []string) (Config, error) {
	cfg := Config{Stdout: os.Stdout, Stderr: os.Stderr}
	i := slices.Index(args, "--")
	if i < 0 {
		if slices.Contains(args, "-h") || slices.Contains(args, "-help") || slices.Contains(args, "--help") {
			return Config{}, flag.ErrHelp
		}
		return Config{}, errors.New("no command: want loadgen watch [flags] -- COMMAND [ARGS...]")
	}
	fs := newFlagSet(&cfg)
	if _, err := flagset.Parse(fs, args[:i]); err != nil {
		return Config{}, err
	}
	cfg.Command = args[i+1:]
	if len(cfg.Command) == 0 {
		return Config{}, errors.New("no command after --: want loadgen watch [flags] -- COMMAND [ARGS...]")
	}
	if cfg.Admin == "" {
		return Config{}, errors.New("flag -admin is required: the target's admin listener, http://HOST:PORT")
	}
	if strings.Contains(cfg.Admin, ",") {
		admins, err := replicas.Split(cfg.Admin)
		if err != nil {
			return Config{}, err
		}
		cfg.Admin = strings.Join(admins, ",")
	} else {
		admin, err := statsclient.AdminURL(cfg.Admin, true, "")
		if err != nil {
			return Config{}, err
		}
		cfg.Admin = admin
	}
	if (cfg.OK >= 0) != (cfg.Attempts >= 0) {
		return Config{}, errors.New("flags -client-ok and -client-attempts go together")
	}
	if cfg.OK > cfg.Attempts {
		return Config{}, fmt.Errorf("flag -client-ok %d is more than -client-attempts %d", cfg.OK, cfg.Attempts)
	}
	return cfg, nil
}

// Usage prints the flags and their defaults.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: loadgen watch -admin http://HOST:PORT [flags] -- COMMAND [ARGS...]")
	fs := newFlagSet(&Config{})
	fs.SetOutput(w)
	fs.PrintDefaults()
	io.WriteString(w, scenario.ExitHelp)
}

func newFlagSet(cfg *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.Admin, "admin", "", "`URL` of the target's admin listener, http://HOST:PORT (required)"+scenario.AdminMore)
	flagset.Int(fs, &cfg.Attempts, "client-attempts", -1, -1, 100000000, "the tool's connection attempts, as it reports them (`N`; -1 = not given)")
	flagset.Int(fs, &cfg.OK, "client-ok", -1, -1, 100000000, "the tool's successful connections, as it reports them (`N`; -1 = not given)")
	fs.Func("client-sent", "messages the tool says it sent (`N`)", int64Flag(&cfg.Sent))
	fs.Func("client-received", "replies the tool says it received (`N`)", int64Flag(&cfg.Received))
	cfg.Sent, cfg.Received = -1, -1
	flagset.Duration(fs, &cfg.Deadline, "deadline", 0, true, "the tool's per-connection deadline, for the verdicts (0 = unknown)")
	flagset.Duration(fs, &cfg.Settle, "settle", DefaultSettle, true, "after the command, how long to wait for the target to see its connections close")
	cfg.Thresholds.Flag(fs, metrics)
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

// Report is the server's view of the command's run, and the verdicts.
type Report struct {
	Admin    string   `json:"admin"`
	Variant  string   `json:"variant"`
	Command  []string `json:"command"`
	ExitCode int      `json:"exit_code"` // the command's; -1 when it could not start or was killed
	Seconds  float64  `json:"seconds"`
	Attempts int      `json:"client_attempts"`
	OK       int      `json:"client_ok"`
	Sent     int64    `json:"client_sent"`
	Received int64    `json:"client_received"`
	// Server is the /stats difference over the run (of several replicas,
	// the sum of theirs: Replicas has each one's).
	Server   protocol.Stats     `json:"server"`
	Replicas []replicas.Replica `json:"replicas,omitempty"`
	Verdicts []verdict.Verdict  `json:"verdicts"`
	// Thresholds: each -threshold and whether it held.
	scenario.Checks
}

// Run snapshots, runs the command, snapshots, and reports. It returns an
// error when the target cannot be read; the command's own failure is in
// the report (ExitCode).
func Run(ctx context.Context, cfg Config, notes io.Writer) (*Report, error) {
	target := scenario.Open(ctx, cfg.Admin) // without the configuration, the verdicts that need it are left out
	defer target.Close()
	before := target.Snapshot(ctx)
	if before.Err != nil {
		return nil, fmt.Errorf("%w: no /stats from %s before the command: %w", scenario.ErrUnreachable, cfg.Admin, before.Err)
	}

	cmd := exec.CommandContext(ctx, cfg.Command[0], cfg.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, cfg.Stdout, cfg.Stderr
	began := time.Now()
	runErr := cmd.Run()
	rep := &Report{Admin: cfg.Admin, Variant: before.Stats.Variant, Command: cfg.Command, Seconds: time.Since(began).Seconds(),
		Attempts: cfg.Attempts, OK: cfg.OK, Sent: cfg.Sent, Received: cfg.Received}
	var exit *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exit):
		rep.ExitCode = exit.ExitCode()
	default:
		rep.ExitCode = -1
		fmt.Fprintf(notes, "loadgen watch: %v\n", runErr)
	}

	after := target.Settled(context.WithoutCancel(ctx), before, cfg.Settle)
	b, a := scenario.Pair(before, after)
	if a.Err != nil {
		return nil, fmt.Errorf("no /stats from %s after the command: %w", cfg.Admin, a.Err)
	}
	rep.Server = protocol.Diff(b.Stats.Stats, a.Stats.Stats)
	judge := verdict.Run{Attempts: max(cfg.Attempts, 0), Connected: cfg.OK, Deadline: cfg.Deadline,
		Sent: cfg.Sent, Received: cfg.Received, ClientCPU: -1, Config: target.Config, Server: &rep.Server, ServerCPU: -1}
	if parts := scenario.Parts(before, after); len(parts) > 1 {
		rep.Replicas, judge.Replicas = parts, parts
	}
	if cfg.Attempts < 0 {
		judge.Connected = 0
	}
	rep.Verdicts = verdict.Judge(judge)
	return rep, nil
}

// ExitStatus is the command's exit status, which loadgen watch exits with.
func (r *Report) ExitStatus() int { return r.ExitCode }

// WriteJSON writes the report as one JSON object and a newline.
func (r *Report) WriteJSON(w io.Writer) error { return sidebyside.WriteJSON(w, r) }

// WriteTable writes the server's view of the command's run and the
// verdicts.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Server
	fmt.Fprintf(w, "watch: %s (%s), %q exited %d after %.2fs; the server's view of it:\n", r.Variant, r.Admin, r.Command, r.ExitCode, r.Seconds)
	header := "server"
	if n := len(r.Replicas); n > 1 {
		header = fmt.Sprintf("server (sum of %d replicas)", n)
	}
	t := sidebyside.New(w, &s, header)
	client := func(n int) string {
		if n < 0 {
			return "-"
		}
		return strconv.Itoa(n)
	}
	client64 := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	h := s.Handshakes
	t.Row("attempts", client(r.Attempts), strconv.FormatUint(h[protocol.ResultOK]+h[protocol.ResultRejected]+h[protocol.ResultFailed]+h[protocol.ResultAbandoned], 10)+" seen")
	t.Row("connected", client(r.OK), fmt.Sprintf("ok %d", h[protocol.ResultOK]))
	t.Row("not connected", "", fmt.Sprintf("rejected %d, failed %d, abandoned %d", h[protocol.ResultRejected], h[protocol.ResultFailed], h[protocol.ResultAbandoned]))
	t.Row("handshake p50/p99/max", "", fmt.Sprintf("%.1f / %.1f / %.1f ms", s.HandshakeLatency.P50*1000, s.HandshakeLatency.P99*1000, s.HandshakeLatency.Max*1000))
	t.Row("messages to the server", client64(r.Sent), strconv.FormatUint(s.MessagesReceived, 10))
	t.Row("messages from the server", client64(r.Received), strconv.FormatUint(s.MessagesSent, 10))
	t.Row("bytes in / out", "", fmt.Sprintf("%d / %d", s.BytesReceived, s.BytesSent))
	t.Row("disconnects", "", fmt.Sprint(s.Disconnects))
	if s.BroadcastDropped > 0 || len(s.InvalidMessages) > 0 {
		t.Row("dropped / invalid", "", fmt.Sprintf("%d / %v", s.BroadcastDropped, s.InvalidMessages))
	}
	if len(s.Faults) > 0 || len(s.AcceptErrors) > 0 {
		t.Row("faults / accept errors", "", fmt.Sprintf("%v / %v", s.Faults, s.AcceptErrors))
	}
	t.Row("cpu seconds", "", strconv.FormatFloat(s.CPUSeconds, 'f', 2, 64))
	if err := t.Flush(); err != nil {
		return err
	}
	replicas.WriteTable(w, r.Replicas)
	verdict.Write(w, r.Verdicts)
	return nil
}

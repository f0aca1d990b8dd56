// Package watch is `loadgen watch`: reconciliation around any load tool.
// It snapshots the target's /stats (and its configuration from /health),
// runs the tool with its output passing through (and kept, to read the
// tool's figures from), waits for the target to see the tool's
// connections go, snapshots again, and prints the server's view of
// exactly what the tool did: handshakes by result and their latency,
// messages, disconnects, drops, faults, CPU. The client side of every
// comparison is the tool's own: read from its output or report file
// (k6, artillery, tsung, websocket-bench, the project's Socket.IO clients:
// see package clientfigs), or from the -client-json file the tool wrote.
// Without either, the verdicts tell the server's figures and say that the
// client's are unknown; a command that failed is reported as failed.
//
//	loadgen watch -admin http://127.0.0.1:9100 -- node scripts/clients/sio-connect.mjs --url http://127.0.0.1:8080 --n 100
//
// Counts typed by hand go to loadgen reconcile, after the run.
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

	"github.com/knowngood/knowngood/loadgen/internal/clientfigs"
	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/sidebyside"
	"github.com/knowngood/knowngood/loadgen/internal/statsclient"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/shared/protocol"
)

// DefaultSettle bounds the wait, after the command, for the target to see
// its connections close.
const DefaultSettle = 5 * time.Second

// Config is one watched run.
type Config struct {
	Admin   string
	Command []string
	// ClientJSON is the file, in clientfigs.JSONShape, that the command
	// writes its counts to; read after it exits ("" for none: the figures
	// are read from the tool's own output).
	ClientJSON string
	Deadline   time.Duration // the tool's per-connection deadline, for the verdicts; 0 = unknown
	Settle     time.Duration
	JSON       string
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
	if err := refuseTyped(args[:i]); err != nil {
		return Config{}, err
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
	return cfg, nil
}

// typed are the flags of counts typed by hand, which loadgen watch no
// longer takes: typed before the run, they could only be guesses.
var typed = []string{"client-attempts", "client-ok", "client-sent", "client-received"}

// refuseTyped refuses counts typed before the run, saying where they go.
func refuseTyped(args []string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && slices.Contains(typed, name) {
			return fmt.Errorf("flag -%s: loadgen watch reads the client's counts from the tool itself (k6, artillery, tsung, websocket-bench, scripts/clients), "+
				"or from -client-json FILE that the tool writes; to type counts after a run, use loadgen reconcile -before stats.json -%s N", name, name)
		}
	}
	return nil
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
	fs.StringVar(&cfg.ClientJSON, "client-json", "", "read the tool's counts from `FILE` after it exits, "+
		`{"attempts":N,"ok":N,"sent":N,"received":N} (each optional), for a tool loadgen does not read itself`)
	flagset.Duration(fs, &cfg.Deadline, "deadline", 0, true, "the tool's per-connection deadline, for the verdicts (0 = unknown)")
	flagset.Duration(fs, &cfg.Settle, "settle", DefaultSettle, true, "after the command, how long to wait for the target to see its connections close")
	cfg.Thresholds.Flag(fs, metrics)
	fs.StringVar(&cfg.JSON, "json", "", "also write the report as one JSON object to `FILE` (- = stdout; the table then goes to stderr)")
	return fs
}

// Report is the server's view of the command's run, and the verdicts.
type Report struct {
	Admin    string   `json:"admin"`
	Variant  string   `json:"variant"`
	Command  []string `json:"command,omitempty"`
	ExitCode int      `json:"exit_code"` // the command's; -1 when it could not start or was killed
	Seconds  float64  `json:"seconds"`
	// Client is the tool's own counts (-1: unknown) and where they came
	// from (client_source; "" when unknown).
	clientfigs.Figures
	// Server is the /stats difference over the run (of several replicas,
	// the sum of theirs: Replicas has each one's).
	Server   protocol.Stats     `json:"server"`
	Replicas []replicas.Replica `json:"replicas,omitempty"`
	Verdicts []verdict.Verdict  `json:"verdicts"`
	// Loss: the verdicts found something lost on either side, a client
	// claiming more than the server did, or the command failing
	// (verdict.Lost); ClientUnknown: the client's figures
	// were unknown, so nothing was placed on the client.
	Loss          bool `json:"loss"`
	ClientUnknown bool `json:"client_unknown"`
	// Thresholds: each -threshold and whether it held.
	scenario.Checks
}

// FoundLoss reports whether the verdicts found a loss (verdict.Lost).
func (r *Report) FoundLoss() bool { return r.Loss }

// FiguresUnknown reports whether the client's figures were unknown.
func (r *Report) FiguresUnknown() bool { return r.ClientUnknown }

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
	fmt.Fprintf(notes, "loadgen watch: the target's live dashboard: %s\n", dashboards(cfg.Admin))
	plan, err := clientfigs.Prepare(cfg.Command)
	if err != nil {
		return nil, err
	}
	defer plan.Close()
	if plan.Note != "" && cfg.ClientJSON == "" {
		fmt.Fprintln(notes, plan.Note)
	} else {
		plan.Command = cfg.Command
	}

	var stdout, stderr clientfigs.Tail
	cmd := exec.CommandContext(ctx, plan.Command[0], plan.Command[1:]...)
	cmd.Stdin = os.Stdin
	cmd.Stdout, cmd.Stderr = io.MultiWriter(cfg.Stdout, &stdout), io.MultiWriter(cfg.Stderr, &stderr)
	began := time.Now()
	runErr := cmd.Run()
	rep := &Report{Admin: cfg.Admin, Variant: before.Stats.Variant, Command: plan.Command, Seconds: time.Since(began).Seconds()}
	var exit *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exit):
		rep.ExitCode = exit.ExitCode()
	default:
		rep.ExitCode = -1
		fmt.Fprintf(notes, "loadgen watch: %v\n", runErr)
	}

	var figs clientfigs.Figures
	if cfg.ClientJSON != "" {
		figs, err = clientfigs.ReadJSONFile(cfg.ClientJSON)
	} else {
		figs, err = plan.Read(clientfigs.Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, rep.ExitCode)
	}
	if err != nil {
		fmt.Fprintf(notes, "loadgen watch: the client's figures: %v\n", err)
	}
	after := target.Settled(context.WithoutCancel(ctx), before, cfg.Settle)
	b, a := scenario.Pair(before, after)
	if a.Err != nil {
		return nil, fmt.Errorf("no /stats from %s after the command: %w", cfg.Admin, a.Err)
	}
	rep.Server = protocol.Diff(b.Stats.Stats, a.Stats.Stats)
	rep.Judge(figs, target.Config, scenario.Parts(before, after), cfg.Deadline)
	return rep, nil
}

// dashboards are the dashboard URLs of admins (comma-separated): each
// admin listener serves its target's at /.
func dashboards(admins string) string {
	var urls []string
	for _, a := range strings.Split(admins, ",") {
		urls = append(urls, strings.TrimSuffix(a, "/")+"/")
	}
	return strings.Join(urls, " ")
}

// Judge sets the client's figures and the verdicts on the server's view
// (Server): config is the target's configuration, parts each replica's
// part (nil for one process), deadline the client's per-connection
// deadline (0: unknown).
func (r *Report) Judge(figs clientfigs.Figures, config map[string]string, parts []replicas.Replica, deadline time.Duration) {
	if socketIO(r.Variant, config["protocol"]) {
		figs = figs.ForSocketIO()
	}
	r.Figures = figs
	judge := verdict.Run{Attempts: figs.Attempts, Connected: figs.OK, Deadline: deadline, Sent: figs.Sent, Received: figs.Received,
		ClientCPU: -1, Config: config, Server: &r.Server, ServerCPU: -1, Unknown: true, Source: figs.Source, ExitStatus: r.ExitCode}
	if len(parts) > 1 {
		r.Replicas, judge.Replicas = parts, parts
	}
	r.Verdicts = verdict.Judge(judge)
	r.Loss, r.ClientUnknown = verdict.Lost(r.Verdicts), verdict.Unknowing(r.Verdicts)
}

// socketIO reports whether the target speaks Socket.IO. loadgen imports
// no server code, so it reads the protocol /health publishes; a target
// that does not publish one is known by knowngood's naming (the WebSocket
// variants are echo-* and broadcast-*).
func socketIO(variant, proto string) bool {
	if proto != "" {
		return proto == protocol.ProtocolSocketIO
	}
	return variant != "" && !strings.HasPrefix(variant, "echo-") && !strings.HasPrefix(variant, "broadcast-")
}

// ExitStatus is the command's exit status, which loadgen watch exits with.
func (r *Report) ExitStatus() int { return r.ExitCode }

// WriteTable writes the server's view of the command's run and the
// verdicts.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Server
	if r.Command != nil {
		fmt.Fprintf(w, "watch: %s (%s), %q exited %d after %.2fs; the server's view of it:\n", r.Variant, r.Admin, r.Command, r.ExitCode, r.Seconds)
	} else {
		fmt.Fprintf(w, "reconcile: %s (%s), over %.2fs; the server's view of the run:\n", r.Variant, r.Admin, r.Seconds)
	}
	t := sidebyside.New(w, &s, func(*protocol.Stats) string {
		if n := len(r.Replicas); n > 1 {
			return fmt.Sprintf("server (sum of %d replicas)", n)
		}
		return "server"
	})
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
	source := r.Source
	if source == "" {
		source = "unknown"
	}
	t.Row("client figures from", source, "")
	h := s.Handshakes
	t.Row("attempts", client(r.Attempts), strconv.FormatUint(h[protocol.ResultOK]+h[protocol.ResultRejected]+h[protocol.ResultFailed]+h[protocol.ResultAbandoned], 10)+" seen")
	t.Row("connected", client(r.OK), fmt.Sprintf("ok %d", h[protocol.ResultOK]))
	t.Row("not connected", "", fmt.Sprintf("rejected %d, failed %d, abandoned %d", h[protocol.ResultRejected], h[protocol.ResultFailed], h[protocol.ResultAbandoned]))
	t.Row("handshake p50/p99/max", "", fmt.Sprintf("%.1f / %.1f / %.1f ms", s.HandshakeLatency.P50*1000, s.HandshakeLatency.P99*1000, s.HandshakeLatency.Max*1000))
	t.Row("messages to the server", client64(r.Sent), strconv.FormatUint(s.MessagesReceived, 10))
	t.Row("messages from the server", client64(r.Received), strconv.FormatUint(s.MessagesSent, 10))
	t.Row("bytes in / out", "", fmt.Sprintf("%d / %d", s.BytesReceived, s.BytesSent))
	t.Row("disconnects", "", orNone(s.Disconnects))
	if s.BroadcastDropped > 0 {
		t.Row("broadcasts dropped", "", strconv.FormatUint(s.BroadcastDropped, 10))
	}
	if len(s.InvalidMessages) > 0 {
		t.Row("invalid messages", "", tally.Line(s.InvalidMessages))
	}
	if len(s.Faults) > 0 {
		t.Row("faults injected", "", tally.Line(s.Faults))
	}
	if len(s.AcceptErrors) > 0 {
		t.Row("accept errors", "", tally.Line(s.AcceptErrors))
	}
	t.Row("cpu seconds", "", strconv.FormatFloat(s.CPUSeconds, 'f', 2, 64))
	if err := t.Flush(); err != nil {
		return err
	}
	replicas.WriteTable(w, r.Replicas)
	verdict.Write(w, r.Verdicts)
	return nil
}

// orNone is the counts by kind on one line, or "none".
func orNone(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	return tally.Line(m)
}

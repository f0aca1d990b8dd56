// Command handshake is the handshake experiment (make
// experiment-handshake): N Socket.IO connects at once, each with a 15 s
// deadline, against empty, async and blocking (a 50 ms connect on one
// shared loop), measured with four clients side by side (loadgen, the
// official JS socket.io-client, python-socketio's AsyncClient, and the
// zishang520 Go client used as its README shows: default transports, its
// own connect timeout; scripts/clients/sio-connect-go), with the server's
// own count of each run beside them. It prints one Markdown table (and
// writes it to -out) with the success rate, p50/p95/max, total time, the
// server's completed handshakes, the success that the blocking contract
// predicts: min(1, T / (N x delay)), and which side lost what the client
// did not count, from the server's counts (lostBy); with -html, one
// self-contained HTML report with the success rate against N for every
// variant and client, and loadgen's runs in full.
//
//	go run ./scripts/experiments/handshake [-n 50,100,200,500] [-clients loadgen,js,python,go] [-deadline 15s] [-out FILE] [-html FILE]
//
// Run it from the repository root, after make deps. Everything listens on
// 127.0.0.1; every run has a fresh server, and every process it starts is
// stopped before it returns.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/handshake"
	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/protocol"
)

var (
	allVariants = variants.NamesOf(variants.ByFamily(variants.SocketIO))
	allClients  = []string{"loadgen", "js", "python", "go"}
)

// goClientPkg is the Go client's command.
const goClientPkg = "./scripts/clients/sio-connect-go"

// delay is the servers' -delay: the cost of one connect on async and
// blocking.
const delay = 50 * time.Millisecond

type options struct {
	ns       []int
	variants []string
	clients  []string
	deadline time.Duration
	out      string
	html     string
}

func main() { benchrun.Main("experiment-handshake", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("experiment-handshake", flag.ContinueOnError)
	ns := fs.String("n", "50,100,200,500", "comma-separated `list` of connection counts")
	variants := fs.String("variants", strings.Join(allVariants, ","), "comma-separated `list` of variants")
	clients := fs.String("clients", strings.Join(allClients, ","), "comma-separated `list` of clients: loadgen, js, python, go (the zishang520 Go client with its default transports)")
	deadline := fs.Duration("deadline", 15*time.Second, "each connect's deadline, on every client")
	out := fs.String("out", "", "also write the table to `FILE`")
	htmlOut := fs.String("html", "", "also write an HTML report with charts to `FILE`")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{deadline: *deadline, out: *out, html: *htmlOut}
	var err error
	if o.ns, err = benchrun.Counts("n", *ns); err != nil {
		return options{}, err
	}
	if o.variants, err = benchrun.Pick("variants", *variants, allVariants); err != nil {
		return options{}, err
	}
	if o.clients, err = benchrun.Pick("clients", *clients, allClients); err != nil {
		return options{}, err
	}
	if o.deadline <= 0 {
		return options{}, errors.New("invalid value for flag -deadline: want a positive duration")
	}
	return o, nil
}

// result is what each client prints (loadgen's JSON and the scripts' share
// these names).
type result struct {
	Attempts  int      `json:"attempts"`
	Connected int      `json:"connected"`
	P50ms     *float64 `json:"p50_ms"`
	P95ms     *float64 `json:"p95_ms"`
	MaxMs     *float64 `json:"max_ms"`
	TotalMs   float64  `json:"total_ms"`
	// FirstTransport (the Go client): by the transport each connection
	// tried first, its attempts and those that connected.
	FirstTransport map[string]struct {
		Attempts  int `json:"attempts"`
		Connected int `json:"connected"`
	} `json:"first_transport"`
}

// row is one run: a client against a fresh server.
type row struct {
	variant, client string
	n               int
	res             *result
	server          *protocol.Stats   // the /stats difference over the run
	loadgen         *handshake.Report // loadgen's whole report, for the HTML
	err             error
}

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	var rows []row
	for _, v := range o.variants {
		for _, n := range o.ns {
			for _, c := range o.clients {
				rows = append(rows, measure(ctx, stderr, o, bins, v, c, n))
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	var table bytes.Buffer
	writeTable(&table, o, rows)
	_, _ = stdout.Write(table.Bytes())
	if o.out != "" {
		if err := os.WriteFile(o.out, table.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if o.html != "" {
		return writeHTML(o, rows)
	}
	return nil
}

// writeHTML is the report with charts: the success rate against N for
// every variant and client, then each run.
func writeHTML(o options, rows []row) error {
	var runs []htmlreport.Run
	for _, r := range rows {
		if r.res == nil {
			continue
		}
		name := fmt.Sprintf("%s, %s, N=%d", r.variant, r.client, r.n)
		run := htmlreport.Run{Concurrency: r.n, Attempts: r.res.Attempts, Succeeded: r.res.Connected}
		if r.loadgen != nil {
			var err error
			if run, err = r.loadgen.HTMLRun(); err != nil {
				return err
			}
		}
		var ok *float64
		if r.server != nil {
			v := float64(r.server.Handshakes[protocol.ResultOK])
			ok = &v
		}
		run.Name, run.Group = name, r.variant+", "+r.client
		run.Counts = []htmlreport.Count{{Name: "connected (server: ok)", Client: float64(r.res.Connected), Server: ok}}
		runs = append(runs, run)
	}
	f, err := os.Create(o.html)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("experiment-handshake: N Socket.IO connects at once, deadline %s, connect cost %s", o.deadline, delay)
	if err := htmlreport.WriteHTML(f, title, runs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// measure starts a fresh server (on blocking, the connects a short deadline
// gave up on would still hold the loop after a run) and runs one client.
func measure(ctx context.Context, stderr io.Writer, o options, bins *benchrun.Binaries, variant, client string, n int) row {
	r := row{variant: variant, client: client, n: n}
	fmt.Fprintf(stderr, "%s, N=%d, %s\n", variant, n, client)
	p, err := benchrun.Start(ctx, stderr, nil, "-variant", variant, "-delay", delay.String())
	if err != nil {
		r.err = err
		return r
	}
	defer p.Stop()
	url, admin := "http://"+p.Addr, p.AdminURL()
	before, err := harness.ReadStats(nil, admin)
	if err != nil {
		r.err = err
		return r
	}
	deadlineMs := strconv.FormatInt(o.deadline.Milliseconds(), 10)
	var cmd []string
	switch client {
	case "loadgen":
		cmd = []string{bins.Loadgen, "handshake", "-url", url, "-n", strconv.Itoa(n), "-deadline", o.deadline.String(), "-transport", "websocket", "-echo=false", "-admin", admin, "-json", "-"}
	case "js":
		cmd = []string{"node", "scripts/clients/sio-connect.mjs", "--url", url, "--n", strconv.Itoa(n), "--transports", "websocket", "--deadline-ms", deadlineMs}
	case "python":
		cmd = []string{"/usr/bin/python3", "scripts/clients/sio_connect.py", "--url", url, "--n", strconv.Itoa(n), "--transports", "websocket", "--deadline-ms", deadlineMs}
	case "go":
		// No --transports: the library's default set, as its README uses it.
		bin, err := harness.Build(goClientPkg, "sio-connect-go")
		if err != nil {
			r.err = err
			return r
		}
		cmd = []string{bin, "--url", url, "--n", strconv.Itoa(n), "--deadline-ms", deadlineMs}
	}
	cctx, cancel := context.WithTimeout(ctx, 2*o.deadline+time.Minute)
	defer cancel()
	c := exec.CommandContext(cctx, cmd[0], cmd[1:]...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := harness.LoadgenRan(c.Run(), out.Bytes()); err != nil {
		r.err = fmt.Errorf("%s: %v: %s", client, err, benchrun.LastLine(errOut.String()))
		return r
	}
	var res result
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &res); err != nil {
		r.err = fmt.Errorf("%s printed %q: %v", client, out.String(), err)
		return r
	}
	r.res = &res
	if client == "loadgen" {
		var rep handshake.Report
		if json.Unmarshal(bytes.TrimSpace(out.Bytes()), &rep) == nil {
			r.loadgen = &rep
		}
	}
	// The server's count, once the client's connections have gone (or
	// after 5 s): its last handshakes and disconnects are counted then.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		after, err := harness.ReadStats(nil, admin)
		if err == nil && (after.ConnectionsActive <= before.ConnectionsActive || time.Now().After(end)) {
			d := protocol.Diff(before, after)
			r.server = &d
			break
		}
		if err != nil && time.Now().After(end) {
			break
		}
	}
	return r
}

func writeTable(w io.Writer, o options, rows []row) {
	fmt.Fprintf(w, "\nN Socket.IO connects at once, deadline %s each, a fresh server per run, connect cost %s (async: on its own timer; blocking: on the one shared loop). Over WebSocket, but go: the zishang520 Go client with its default transports. Success is the client's count; server ok is the server's own; lost by says, from the server's counts, which side lost what the client did not count.\n\n", o.deadline, delay)
	fmt.Fprintln(w, "| variant | N | client | success % | predicted % | p50 ms | p95 ms | max ms | total s | server ok | server p99 ms | lost by |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		predicted := 100.0
		if r.variant == benchrun.SharedLoop {
			predicted = 100 * min(1, o.deadline.Seconds()/(float64(r.n)*delay.Seconds()))
		}
		if r.res == nil {
			fmt.Fprintf(w, "| %s | %d | %s | error: %v | %.1f | | | | | | | |\n", r.variant, r.n, r.client, r.err, predicted)
			continue
		}
		ok, p99 := "-", "-"
		if r.server != nil {
			ok = strconv.FormatUint(r.server.Handshakes[protocol.ResultOK], 10)
			p99 = strconv.FormatFloat(r.server.HandshakeLatency.P99*1000, 'f', 1, 64)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.1f | %.1f | %s | %s | %s | %.2f | %s | %s | %s |\n",
			r.variant, r.n, r.client, 100*float64(r.res.Connected)/float64(max(r.res.Attempts, 1)), predicted,
			benchrun.Num(r.res.P50ms, 1), benchrun.Num(r.res.P95ms, 1), benchrun.Num(r.res.MaxMs, 1), r.res.TotalMs/1000, ok, p99, lostBy(r))
	}
}

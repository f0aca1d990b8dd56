// Command handshake is the handshake experiment (make
// experiment-handshake): the founding report's story rerun beside the real
// servers it stands in for. N Socket.IO connects at once against each
// server, knowngood's (empty, async, and blocking under each
// -blocking-model) and the real ones (python-socketio's AsyncServer on
// uvicorn and Node's socket.io, each with the report's empty, async and
// blocking connect handlers), under the same clients: the report's own
// (python-socketio's AsyncClient waiting its default second from the
// Engine.IO open), python-socketio, socket.io-client and loadgen waiting
// the whole -deadline, and the zishang520 Go client at today's version
// and the report's v3.0.0, with its default transports and with WebSocket
// alone. A few clients connected before each burst echo every 100 ms
// during it; their worst round trip shows the frozen loop too.
//
// It prints one Markdown table (and writes it to -out): per server, N and
// client the success (the range over -reps runs), the report's own figure
// where it has one, the success the target's model predicts, p50, max,
// the echoers' worst round trip, knowngood's own count and which side lost
// what the client did not count, and, for every knowngood row, whether it
// agrees with its real peer: success within 5 points of the peer's range,
// p50 and max within 15 %. Then a summary of the agreements. With -html,
// an HTML report with the success rate against N for every server and
// client.
//
//	go run ./scripts/experiments/handshake [-n 50,100,200,500] [-servers ...] [-clients ...] [-engine zishang520|native] [-reps 1] [-echoers 3] [-delay 50ms] [-deadline 15s] [-out FILE] [-html FILE]
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
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/handshake"
	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

type options struct {
	ns       []int
	servers  []server
	clients  []string
	engine   string
	reps     int
	echoers  int
	delay    time.Duration
	deadline time.Duration
	out      string
	html     string
}

func main() { benchrun.Main("experiment-handshake", parseFlags, run) }

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("experiment-handshake", flag.ContinueOnError)
	ns := fs.String("n", "50,100,200,500", "comma-separated `list` of connection counts")
	servers := fs.String("servers", strings.Join(serverNames(allServers), ","), "comma-separated `list` of servers: knowngood's variants (blocking as blocking-asyncio and blocking-node) and the real ones, python-* and node-*")
	clients := fs.String("clients", strings.Join(allClients, ","), "comma-separated `list` of clients: report (python-socketio waiting its default 1 s from the open), python, js, loadgen, go, go-v3.0.0 (the zishang520 Go client, default transports), go-ws (WebSocket only)")
	engine := fs.String("engine", config.EngineZishang520, "knowngood's Socket.IO engine: zishang520 or native")
	reps := fs.Int("reps", 1, "runs of each server, N and client")
	echoers := fs.Int("echoers", 3, "clients connected before each burst that echo every 100 ms during it (0: none)")
	delay := fs.Duration("delay", 50*time.Millisecond, "what a connect costs on async and blocking, on every server")
	deadline := fs.Duration("deadline", 15*time.Second, "each connect's deadline, on every client")
	out := fs.String("out", "", "also write the table to `FILE`")
	htmlOut := fs.String("html", "", "also write an HTML report with charts to `FILE`")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{engine: *engine, reps: *reps, echoers: *echoers, delay: *delay, deadline: *deadline, out: *out, html: *htmlOut}
	var err error
	if o.ns, err = benchrun.Counts("n", *ns); err != nil {
		return options{}, err
	}
	names, err := benchrun.Pick("servers", *servers, serverNames(allServers))
	if err != nil {
		return options{}, err
	}
	for _, name := range names {
		o.servers = append(o.servers, serverNamed(name))
	}
	if o.clients, err = benchrun.Pick("clients", *clients, allClients); err != nil {
		return options{}, err
	}
	switch {
	case o.engine != config.EngineZishang520 && o.engine != config.EngineNative:
		return options{}, fmt.Errorf("invalid value %q for flag -engine: want zishang520 or native", o.engine)
	case o.reps < 1 || o.reps > 100:
		return options{}, fmt.Errorf("invalid value %d for flag -reps: want 1 to 100", o.reps)
	case o.echoers < 0 || o.echoers > 100:
		return options{}, fmt.Errorf("invalid value %d for flag -echoers: want 0 to 100", o.echoers)
	case o.delay <= 0:
		return options{}, errors.New("invalid value for flag -delay: want a positive duration")
	case o.deadline <= 0:
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
	// Latencies (the python client): every connected one's, sorted.
	Latencies []float64 `json:"latencies_ms"`
	// FirstTransport (the Go client): by the transport each connection
	// tried first, its attempts and those that connected.
	FirstTransport map[string]struct {
		Attempts  int `json:"attempts"`
		Connected int `json:"connected"`
	} `json:"first_transport"`
}

// row is one run: a client against a fresh server.
type row struct {
	server  server
	client  string
	n       int
	res     *result
	stats   *protocol.Stats   // knowngood's /stats difference over the run
	echo    *echoResult       // the echoers', with -echoers
	loadgen *handshake.Report // loadgen's whole report, for the HTML
	err     error
}

func run(ctx context.Context, o options, bins *benchrun.Binaries, stdout, stderr io.Writer) error {
	var rows []row
	for _, s := range o.servers {
		for _, n := range o.ns {
			for _, c := range o.clients {
				for range o.reps {
					rows = append(rows, measure(ctx, stderr, o, bins, s, c, n))
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
			}
		}
	}
	var table bytes.Buffer
	writeTable(&table, o, cellsOf(rows))
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
// every server and client, then each run.
func writeHTML(o options, rows []row) error {
	var runs []htmlreport.Run
	for _, r := range rows {
		if r.res == nil {
			continue
		}
		run := htmlreport.Run{Concurrency: r.n, Attempts: r.res.Attempts, Succeeded: r.res.Connected}
		if r.loadgen != nil {
			var err error
			if run, err = r.loadgen.HTMLRun(); err != nil {
				return err
			}
		}
		var ok *float64
		if r.stats != nil {
			v := float64(r.stats.Handshakes[protocol.ResultOK])
			ok = &v
		}
		run.Name, run.Group = fmt.Sprintf("%s, %s, N=%d", r.server.name, r.client, r.n), r.server.name+", "+r.client
		run.Counts = []htmlreport.Count{{Name: "connected (server: ok)", Client: float64(r.res.Connected), Server: ok}}
		runs = append(runs, run)
	}
	f, err := os.Create(o.html)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("experiment-handshake: N Socket.IO connects at once, deadline %s, connect cost %s, knowngood beside python-socketio and Node's socket.io", o.deadline, o.delay)
	if err := htmlreport.WriteHTML(f, title, runs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// measure starts a fresh server (on blocking, the connects a short
// deadline gave up on would still hold the loop after a run), connects
// the echoers, runs one client, and reads what each saw.
func measure(ctx context.Context, stderr io.Writer, o options, bins *benchrun.Binaries, s server, client string, n int) row {
	r := row{server: s, client: client, n: n}
	fmt.Fprintf(stderr, "%s, N=%d, %s\n", s.name, n, client)
	p, admin, err := s.start(ctx, stderr, o)
	if err != nil {
		r.err = err
		return r
	}
	defer p.Stop()
	url := "http://" + p.Addr
	var ech *echoers
	if o.echoers > 0 {
		if ech, err = startEchoers(ctx, url, o.echoers); err != nil {
			r.err = err
			return r
		}
	}
	var before *protocol.Stats
	if admin != "" {
		st, err := harness.ReadStats(nil, admin)
		if err != nil {
			r.err = err
			return r
		}
		before = &st
	}
	r.res, r.loadgen, r.err = runClient(ctx, o, bins, client, url, admin, n)
	if before != nil && r.err == nil {
		// A frozen loop may still be working through the burst after the
		// client gave up: wait for it as long as it can take.
		r.stats = serverView(admin, before, 5*time.Second+time.Duration(n)*o.delay)
	}
	if ech != nil {
		echo, err := ech.stop()
		if r.err == nil {
			r.echo, r.err = echo, err
		}
	}
	return r
}

// runClient runs one client and reads its JSON line.
func runClient(ctx context.Context, o options, bins *benchrun.Binaries, client, url, admin string, n int) (*result, *handshake.Report, error) {
	cmd, err := command(client, o, bins, url, admin, n)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*o.deadline+time.Minute)
	defer cancel()
	c := exec.CommandContext(cctx, cmd[0], cmd[1:]...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := harness.LoadgenRan(c.Run(), out.Bytes()); err != nil {
		return nil, nil, fmt.Errorf("%s: %v: %s", client, err, benchrun.LastLine(errOut.String()))
	}
	var res result
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &res); err != nil {
		return nil, nil, fmt.Errorf("%s printed %q: %v", client, out.String(), err)
	}
	var rep *handshake.Report
	if client == clientLoadgen {
		rep = &handshake.Report{}
		if json.Unmarshal(bytes.TrimSpace(out.Bytes()), rep) != nil {
			rep = nil
		}
	}
	return &res, rep, nil
}

// serverView is knowngood's count over the run, once the client's
// connections have gone (or after wait): its last handshakes and
// disconnects are counted then. The echoers, connected before, stay.
func serverView(admin string, before *protocol.Stats, wait time.Duration) *protocol.Stats {
	for end := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		after, err := harness.ReadStats(nil, admin)
		if err == nil && (after.ConnectionsActive <= before.ConnectionsActive || time.Now().After(end)) {
			d := protocol.Diff(*before, after)
			return &d
		}
		if err != nil && time.Now().After(end) {
			return nil
		}
	}
}

// Command handshake is the handshake benchmark (make bench-handshake): for
// each Socket.IO variant (empty, async, blocking) and each N, it starts a
// fresh knowngood server, runs `loadgen handshake` against it, and prints one
// Markdown table of the client's and the server's figures; then the same
// client against the Node socket.io v4 reference server
// (scripts/node/sio-server.mjs), and the ratio of handshake rates.
//
//	go run ./scripts/bench/handshake [-n 50,100,200,500,2000] [-variants empty,async,blocking]
//
// Run it from the repository root. Everything listens on 127.0.0.1; every
// process it starts is stopped before it returns.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"knowngood/loadgen/handshake"
	"knowngood/shared/config"
)

type options struct {
	ns        []int
	variants  []string
	deadline  time.Duration
	transport string
	delay     string // the servers' -delay, "" for their default
	node      bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-handshake: %v\n", err)
		os.Exit(2)
	}
	if err := run(ctx, opts, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "bench-handshake: %v\n", err)
		os.Exit(1)
	}
}

// delayOrDefault is the servers' -delay: the flag's, or knowngood's default.
func (o options) delayOrDefault() time.Duration {
	if d, err := time.ParseDuration(o.delay); err == nil {
		return d
	}
	return config.Default().Delay
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench-handshake", flag.ContinueOnError)
	ns := fs.String("n", "50,100,200,500,2000", "comma-separated `list` of connection counts")
	variants := fs.String("variants", "empty,async,blocking", "comma-separated `list` of Socket.IO variants")
	deadline := fs.Duration("deadline", 15*time.Second, "loadgen -deadline")
	transport := fs.String("transport", "websocket", "loadgen -transport")
	delay := fs.String("delay", "", "the servers' -delay, a duration (default: theirs, 50ms)")
	node := fs.Bool("node", true, "also measure the Node socket.io server (empty only)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{deadline: *deadline, transport: *transport, delay: *delay, node: *node}
	if _, err := time.ParseDuration(o.delay); o.delay != "" && err != nil {
		return options{}, fmt.Errorf("invalid value %q for flag -delay: want a duration such as 50ms", o.delay)
	}
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return options{}, fmt.Errorf("invalid value %q for flag -n: want a comma-separated list of positive integers", *ns)
		}
		o.ns = append(o.ns, n)
	}
	for _, v := range strings.Split(*variants, ",") {
		if v = strings.TrimSpace(v); v != "" {
			o.variants = append(o.variants, v)
		}
	}
	if len(o.variants) == 0 {
		return options{}, errors.New("invalid value for flag -variants: want at least one variant")
	}
	return o, nil
}

// row is one measurement.
type row struct {
	variant string
	n       int
	rep     *handshake.Report
	// serverCPU is the server's CPU seconds over the run: from /stats when
	// it has cpu_seconds, else from /proc.
	serverCPU *float64
	err       error
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the repository root (no go.mod here)")
	}
	dir, err := os.MkdirTemp("", "bench-handshake")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	server, loadgen := filepath.Join(dir, "knowngood"), filepath.Join(dir, "loadgen")
	fmt.Fprintln(stderr, "building ./servers and ./loadgen")
	for _, b := range [][2]string{{server, "./servers"}, {loadgen, "./loadgen"}} {
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
		}
	}

	// A fresh server for every run: on blocking, the connects a short
	// deadline gave up on still hold the loop after the run.
	var rows []row
	for _, variant := range o.variants {
		for _, n := range o.ns {
			addr, adminAddr := freeAddr(), freeAddr()
			args := []string{"-variant", variant, "-addr", addr, "-admin-addr", adminAddr, "-log-format", "json"}
			if o.delay != "" {
				args = append(args, "-delay", o.delay)
			}
			p, err := start(ctx, stderr, server, args, "knowngood "+variant)
			if err != nil {
				return err
			}
			rows = append(rows, measure(ctx, stderr, o, loadgen, variant, n, p, "http://"+p.adminAddr))
			p.stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}

	var nodeRows []row
	if o.node {
		p, err := start(ctx, stderr, "node", []string{"scripts/node/sio-server.mjs", "0"}, "node socket.io")
		if err != nil {
			return fmt.Errorf("%w (npm install in scripts/ first?)", err)
		}
		for _, n := range o.ns {
			nodeRows = append(nodeRows, measure(ctx, stderr, o, loadgen, "node socket.io (empty)", n, p, ""))
		}
		p.stop()
	}

	writeTable(stdout, o, append(rows, nodeRows...))
	if len(nodeRows) > 0 {
		writeRatios(stdout, rows, nodeRows)
	}
	return ctx.Err()
}

// measure runs loadgen once against a running server.
func measure(ctx context.Context, stderr io.Writer, o options, loadgen, variant string, n int, p *proc, admin string) row {
	r := row{variant: variant, n: n}
	fmt.Fprintf(stderr, "%s, N=%d\n", variant, n)
	ctx, cancel := context.WithTimeout(ctx, 2*o.deadline+30*time.Second)
	defer cancel()
	cpu0, procOK0 := procCPU(p.cmd.Process.Pid)
	cmd := exec.CommandContext(ctx, loadgen, "handshake", "-url", "http://"+p.addr, "-n", strconv.Itoa(n),
		"-deadline", o.deadline.String(), "-transport", o.transport, "-admin", admin, "-json", "-")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		r.err = fmt.Errorf("loadgen: %v: %s", err, lastLine(errOut.String()))
		fmt.Fprintf(stderr, "  %v\n", r.err)
		return r
	}
	cpu1, procOK1 := procCPU(p.cmd.Process.Pid)
	var rep handshake.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		r.err = fmt.Errorf("loadgen output: %v", err)
		return r
	}
	r.rep = &rep
	switch {
	case rep.Server != nil && rep.Server.CPUSeconds != nil:
		r.serverCPU = rep.Server.CPUSeconds
	case procOK0 && procOK1:
		d := cpu1 - cpu0
		r.serverCPU = &d
	}
	if rep.ServerError != "" && admin != "" {
		fmt.Fprintf(stderr, "  %s\n", rep.ServerError)
	}
	return r
}

func writeTable(w io.Writer, o options, rows []row) {
	fmt.Fprintf(w, "\nHandshakes with loadgen (%s, deadline %s), one fresh server per run:\n\n", o.transport, o.deadline)
	fmt.Fprintln(w, "| variant | N | success % | predicted % | handshakes/s | client p50 ms | client p99 ms | server p50 ms | server p99 ms | server CPU s | client CPU s |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		if r.rep == nil {
			fmt.Fprintf(w, "| %s | %d | error: %v | | | | | | | | |\n", r.variant, r.n, r.err)
			continue
		}
		// The README's blocking curve: min(1, T / (N x delay)).
		predicted := "100.0"
		if r.variant == "blocking" {
			predicted = fmt.Sprintf("%.1f", 100*min(1, o.deadline.Seconds()/(float64(r.n)*o.delayOrDefault().Seconds())))
		}
		rep := r.rep
		var sp50, sp99 *float64
		if rep.Server != nil {
			sp50, sp99 = rep.Server.P50ms, rep.Server.P99ms
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %s | %.0f | %s | %s | %s | %s | %s | %.2f |\n",
			r.variant, r.n, 100*float64(rep.Connected)/float64(rep.Attempts), predicted, rep.HandshakesPerSecond,
			num(rep.P50ms, 1), num(rep.P99ms, 1), num(sp50, 1), num(sp99, 1), num(r.serverCPU, 2), rep.ClientCPUSeconds)
	}
}

// writeRatios prints, for each N, the handshake rate of knowngood empty over
// that of Node socket.io.
func writeRatios(w io.Writer, rows, nodeRows []row) {
	empty := map[int]*handshake.Report{}
	for _, r := range rows {
		if r.variant == "empty" && r.rep != nil {
			empty[r.n] = r.rep
		}
	}
	fmt.Fprintln(w, "\nHandshake rate, knowngood empty / Node socket.io (same client):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| N | knowngood empty /s | node /s | ratio |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	for _, r := range nodeRows {
		kg := empty[r.n]
		if kg == nil || r.rep == nil || r.rep.HandshakesPerSecond == 0 {
			fmt.Fprintf(w, "| %d | - | - | - |\n", r.n)
			continue
		}
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.2f |\n", r.n, kg.HandshakesPerSecond, r.rep.HandshakesPerSecond, kg.HandshakesPerSecond/r.rep.HandshakesPerSecond)
	}
}

func num(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

// proc is a server process, once it has said that it listens.
type proc struct {
	cmd       *exec.Cmd
	name      string
	addr      string
	adminAddr string
	done      chan struct{}
	stopOnce  sync.Once
}

// start runs a server and waits (at most 30 s) for its JSON line with msg
// "listening", which gives addr (and admin_addr for knowngood).
func start(ctx context.Context, stderr io.Writer, bin string, args []string, name string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, name: name, done: make(chan struct{})}
	type ready struct{ addr, admin string }
	readyc := make(chan ready, 1)
	var wg sync.WaitGroup
	var tail lastLines
	scan := func(r io.Reader) {
		defer wg.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			tail.add(string(line))
			var m struct {
				Msg       string `json:"msg"`
				Addr      string `json:"addr"`
				AdminAddr string `json:"admin_addr"`
			}
			if json.Unmarshal(line, &m) == nil && m.Msg == "listening" && m.Addr != "" {
				select {
				case readyc <- ready{m.Addr, m.AdminAddr}:
				default:
				}
			}
		}
	}
	wg.Add(2)
	go scan(stdout)
	go scan(errPipe)
	go func() {
		wg.Wait() // the pipes are read to the end before Wait closes them
		_ = cmd.Wait()
		close(p.done)
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case r := <-readyc:
		p.addr, p.adminAddr = r.addr, r.admin
		fmt.Fprintf(stderr, "%s listening on %s\n", name, p.addr)
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening: %s", name, tail.String())
	case <-t.C:
		p.stop()
		return nil, fmt.Errorf("%s did not say it listens within 30s: %s", name, tail.String())
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// stop sends SIGTERM, and SIGKILL after 10 s, and waits for the exit.
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// procCPU is the user+system CPU seconds of a process, from /proc (Linux).
func procCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const clkTck = 100 // USER_HZ on Linux
	return (ut + st) / clkTck, true
}

// lastLines keeps the last few lines of a server's output, for errors.
type lastLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lastLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > 5 {
		l.lines = l.lines[1:]
	}
}

func (l *lastLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, " | ")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

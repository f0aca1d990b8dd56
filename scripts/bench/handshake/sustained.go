package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

// The sustained mode: -workers clients, each opening a Socket.IO connection
// over WebSocket, joining "/", sending one acknowledged echo, and closing,
// over and over for -sustained, against empty (on each engine), the bare zishang520 server
// and Node socket.io, interleaved, -reps times. The client speaks the
// Engine.IO and Socket.IO wire itself (a few frames a handshake): loadgen's
// full Socket.IO client spends more CPU per handshake than the servers do,
// and on a shared 2-core machine it would measure itself.

// Goals of the sustained comparison.
const (
	goalRate     = 3.0  // empty's rate / Node's, at least
	goalCPUNode  = 0.35 // empty's CPU per handshake / Node's, at most
	goalCPUFloor = 1.0  // empty's CPU per handshake / bare zishang520's, at most
)

// opTimeout bounds each step of one handshake.
const opTimeout = 5 * time.Second

// settle is the wait after a run before the server's CPU is read, so that
// the closes of the run's last connections are counted with it.
const settle = 300 * time.Millisecond

// sioTarget is one server of the sustained comparison.
type sioTarget struct {
	name    string
	p       *harness.Process
	profile string // URL of its CPU profile, "" for none (Node)
	// handshakes counts every handshake made against it, warm-ups
	// included, for the allocations per handshake of its allocs profile.
	handshakes int
}

// sustainedResult is one run against one target.
type sustainedResult struct {
	handshakes, failed int
	firstErr           error
	seconds            float64
	serverCPU          float64 // seconds
	clientCPU          float64 // seconds, this process
	reads, writes      int64   // the server's read and write system calls
}

func (r sustainedResult) rate() float64 { return float64(r.handshakes) / r.seconds }

// cpuPer is the server's CPU µs per handshake; 0 without a handshake.
func (r sustainedResult) cpuPer() float64 { return perHandshake(r.serverCPU, r.handshakes) }

// clientPer is the client's (this process's) CPU µs per handshake.
func (r sustainedResult) clientPer() float64 { return perHandshake(r.clientCPU, r.handshakes) }

func perHandshake(seconds float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return 1e6 * seconds / float64(n)
}

// startSustainedTargets starts empty (with -pprof), the bare zishang520
// server and Node socket.io, as o asks.
func startSustainedTargets(ctx context.Context, o options, stderr io.Writer) ([]*sioTarget, error) {
	var ts []*sioTarget
	stop := func() {
		for _, t := range ts {
			t.p.Stop()
		}
	}
	p, err := benchrun.Start(ctx, stderr, nil, "-variant", benchrun.SioBaseline, "-pprof")
	if err != nil {
		return nil, err
	}
	ts = append(ts, &sioTarget{name: benchrun.SioBaseline, p: p, profile: p.AdminURL() + "/debug/pprof/profile"})
	p, err = benchrun.Start(ctx, stderr, nil, "-variant", benchrun.SioBaseline, "-engine", "native", "-pprof")
	if err != nil {
		stop()
		return nil, err
	}
	ts = append(ts, &sioTarget{name: nativeName, p: p, profile: p.AdminURL() + "/debug/pprof/profile"})
	p, err = benchrun.Start(ctx, stderr, nil, "-variant", benchrun.SioBaseline, "-engine", "native-gnet", "-pprof")
	if err != nil {
		stop()
		return nil, err
	}
	ts = append(ts, &sioTarget{name: nativeGnetName, p: p, profile: p.AdminURL() + "/debug/pprof/profile"})
	if o.bare {
		p, err := benchrun.StartSioFloor(ctx, stderr, "pprof")
		if err != nil {
			stop()
			return nil, err
		}
		ts = append(ts, &sioTarget{name: bareName, p: p, profile: benchrun.SioFloorProfile(p)})
	}
	if o.node {
		p, err := benchrun.StartNode(ctx, stderr, "sio-server.mjs", "node socket.io")
		if err != nil {
			stop()
			return nil, err
		}
		ts = append(ts, &sioTarget{name: nodeName, p: p})
	}
	return ts, nil
}

const (
	bareName   = benchrun.SioFloor
	nodeName   = "node socket.io"
	nativeName = "empty -engine native"
	// The sustained client speaks WebSocket only, which gnet serves.
	nativeGnetName = "empty -engine native-gnet"
)

// runSustained measures every target -reps times, interleaved, after a
// warm-up run of each, and prints the table and the ratios.
func runSustained(ctx context.Context, o options, stdout, stderr io.Writer) error {
	ts, err := startSustainedTargets(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range ts {
			t.p.Stop()
		}
	}()
	for _, t := range ts {
		fmt.Fprintf(stderr, "warm-up: %s\n", t.name)
		if r := sustain(ctx, t, o.workers, o.sustained/5); r.handshakes == 0 {
			return fmt.Errorf("%s: no handshake in the warm-up: %v", t.name, r.firstErr)
		}
	}
	results := map[string][]sustainedResult{}
	for rep := 1; rep <= o.reps; rep++ {
		for _, t := range ts {
			r := sustain(ctx, t, o.workers, o.sustained)
			fmt.Fprintf(stderr, "rep %d, %s: %d handshakes (%d failed), %.0f/s, %.0f µs server CPU, %.1f reads and %.1f writes (system calls) each\n",
				rep, t.name, r.handshakes, r.failed, r.rate(), r.cpuPer(), float64(r.reads)/float64(max(1, r.handshakes)), float64(r.writes)/float64(max(1, r.handshakes)))
			if r.firstErr != nil {
				fmt.Fprintf(stderr, "  first error: %v\n", r.firstErr)
			}
			results[t.name] = append(results[t.name], r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if o.profileDir != "" {
		if err := profileAll(ctx, o, ts, stderr); err != nil {
			fmt.Fprintf(stderr, "profiles: %v\n", err)
		}
	}
	writeSustained(stdout, o, ts, results)
	return nil
}

// sustain runs the workers against t for d.
func sustain(ctx context.Context, t *sioTarget, workers int, d time.Duration) sustainedResult {
	var ok, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	io0 := procIO(t.p.PID())
	cpu0, _ := benchrun.ProcCPUSeconds(t.p.PID())
	self0, _ := benchrun.ProcCPUSeconds(os.Getpid())
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			dialer := &websocket.Dialer{HandshakeTimeout: opTimeout}
			for ctx.Err() == nil && time.Now().Before(end) {
				if err := handshakeOnce(dialer, t.p.Addr); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					time.Sleep(10 * time.Millisecond) // no tight loop against a refusing server
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(settle)
	cpu1, _ := benchrun.ProcCPUSeconds(t.p.PID())
	io1 := procIO(t.p.PID())
	self1, _ := benchrun.ProcCPUSeconds(os.Getpid())
	t.handshakes += int(ok.Load())
	r := sustainedResult{handshakes: int(ok.Load()), failed: int(failed.Load()), seconds: elapsed.Seconds(),
		serverCPU: cpu1 - cpu0, clientCPU: self1 - self0}
	if e := firstErr.Load(); e != nil {
		r.firstErr = *e
	}
	if io0 != nil && io1 != nil {
		r.reads, r.writes = io1[0]-io0[0], io1[1]-io0[1]
	}
	return r
}

// procIO is the read and write system calls that process pid has made
// so far (syscr and syscw of /proc/PID/io); nil when unreadable.
func procIO(pid int) []int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return nil
	}
	var v []int64
	for _, line := range strings.Split(string(b), "\n") {
		for _, name := range []string{"syscr: ", "syscw: "} {
			if rest, ok := strings.CutPrefix(line, name); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
				if err != nil {
					return nil
				}
				v = append(v, n)
			}
		}
	}
	if len(v) != 2 {
		return nil
	}
	return v
}

// handshakeOnce is one Socket.IO connection over WebSocket: the Engine.IO
// open, a CONNECT to "/" and its ack, one acknowledged echo, and a close
// frame.
func handshakeOnce(dialer *websocket.Dialer, addr string) error {
	c, _, err := dialer.Dial("ws://"+addr+"/socket.io/?EIO=4&transport=websocket", nil)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(opTimeout))
	if err := expect(c, "0{"); err != nil {
		return fmt.Errorf("engine.io open: %w", err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte("40")); err != nil {
		return err
	}
	if err := expect(c, "40{"); err != nil {
		return fmt.Errorf("socket.io connect: %w", err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`421["echo","hs"]`)); err != nil {
		return err
	}
	if err := expect(c, `431["hs"]`); err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(opTimeout))
	return nil
}

// expect reads text messages until one starts with prefix, answering
// pings; anything else is an error.
func expect(c *websocket.Conn, prefix string) error {
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(string(msg), prefix):
			return nil
		case string(msg) == "2":
			if err := c.WriteMessage(websocket.TextMessage, []byte("3")); err != nil {
				return err
			}
		default:
			return fmt.Errorf("got %q, want a message starting with %q", msg, prefix)
		}
	}
}

// profileAll takes a CPU profile of each Go target under the same load,
// after the measured runs (the profiler's own cost stays out of them).
func profileAll(ctx context.Context, o options, ts []*sioTarget, stderr io.Writer) error {
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	secs := max(1, int(o.sustained.Seconds()))
	var errs []error
	for _, t := range ts {
		if t.profile == "" {
			continue
		}
		done := make(chan error, 1)
		go func() {
			done <- benchrun.Fetch(ctx, fmt.Sprintf("%s?seconds=%d", t.profile, secs), filepath.Join(o.profileDir, strings.ReplaceAll(t.name, " ", "-")+".pprof"))
		}()
		time.Sleep(100 * time.Millisecond) // the profile starts first
		sustain(ctx, t, o.workers, time.Duration(secs)*time.Second+200*time.Millisecond)
		if err := <-done; err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.name, err))
			continue
		}
		base := filepath.Join(o.profileDir, strings.ReplaceAll(t.name, " ", "-"))
		allocs := strings.Replace(t.profile, "/profile", "/allocs", 1)
		if err := benchrun.Fetch(ctx, allocs, base+".allocs.pprof"); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.name, err))
		}
		fmt.Fprintf(stderr, "profiles of %s: %s.pprof (CPU), %s.allocs.pprof (allocations since its start, over %d handshakes)\n",
			t.name, base, base, t.handshakes)
	}
	return errors.Join(errs...)
}

// writeSustained prints each rep's figures, the medians and the ratios
// against the goals.
func writeSustained(w io.Writer, o options, ts []*sioTarget, results map[string][]sustainedResult) {
	fmt.Fprintf(w, "\nSustained handshakes: %d workers, each connect, CONNECT \"/\", one acked echo, close, for %s; %d reps, interleaved:\n\n",
		o.workers, o.sustained, o.reps)
	fmt.Fprintln(w, "| target | rep | handshakes | failed | handshakes/s | server CPU µs/handshake | client CPU µs/handshake |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	med := map[string][2]float64{}
	for _, t := range ts {
		var rates, cpus []float64
		for i, r := range results[t.name] {
			fmt.Fprintf(w, "| %s | %d | %d | %d | %.0f | %.0f | %.0f |\n", t.name, i+1, r.handshakes, r.failed, r.rate(), r.cpuPer(), r.clientPer())
			if r.handshakes > 0 {
				rates, cpus = append(rates, r.rate()), append(cpus, r.cpuPer())
			}
		}
		med[t.name] = [2]float64{benchrun.Median(rates), benchrun.Median(cpus)}
		fmt.Fprintf(w, "| **%s** | median | | | **%.0f** | **%.0f** | |\n", t.name, med[t.name][0], med[t.name][1])
	}

	fmt.Fprintln(w, "\n| ratio (medians) | value | goal | |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	e, eok := med[benchrun.SioBaseline]
	n, nok := med[nodeName]
	b, bok := med[bareName]
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "not met"
	}
	if eok && nok && n[0] > 0 && n[1] > 0 {
		fmt.Fprintf(w, "| empty rate / Node's | %.2fx | >= %.2fx | %s |\n", e[0]/n[0], goalRate, verdict(e[0]/n[0] >= goalRate))
		fmt.Fprintf(w, "| empty CPU per handshake / Node's | %.2fx | <= %.2fx | %s |\n", e[1]/n[1], goalCPUNode, verdict(e[1]/n[1] <= goalCPUNode))
	}
	for _, name := range []string{nativeName, nativeGnetName} {
		if x, ok := med[name]; ok && nok && n[0] > 0 && n[1] > 0 {
			label := strings.TrimPrefix(name, "empty -engine ")
			fmt.Fprintf(w, "| %s rate / Node's | %.2fx | >= %.2fx | %s |\n", label, x[0]/n[0], goalRate, verdict(x[0]/n[0] >= goalRate))
			fmt.Fprintf(w, "| %s CPU per handshake / Node's | %.2fx | <= %.2fx | %s |\n", label, x[1]/n[1], goalCPUNode, verdict(x[1]/n[1] <= goalCPUNode))
		}
	}
	if eok && bok && b[1] > 0 {
		fmt.Fprintf(w, "| empty CPU per handshake / bare zishang520's | %.2fx | <= %.2fx | %s |\n", e[1]/b[1], goalCPUFloor, verdict(e[1]/b[1] <= goalCPUFloor))
	}
	if bok && nok && n[0] > 0 && n[1] > 0 {
		fmt.Fprintf(w, "| bare zishang520 rate / Node's (the library's floor) | %.2fx | - | |\n", b[0]/n[0])
		fmt.Fprintf(w, "| bare zishang520 CPU per handshake / Node's | %.2fx | - | |\n", b[1]/n[1])
	}
}

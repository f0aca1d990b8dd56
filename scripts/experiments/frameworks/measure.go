package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"

	"github.com/knowngood/knowngood/loadgen/echo"
	"github.com/knowngood/knowngood/loadgen/sustain"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/procfs"
)

// Parts of the tables: the echo scenario gives two.
const (
	partSync    = "sync"
	partAsync   = "async"
	partConns   = scConns
	partLatency = scLatency
)

// sample is one measurement of one part.
type sample struct {
	rate      float64 // sync, async: msg/s
	held      int     // conns: connections held at the end; latency: connections that took part
	asked     int     // conns, latency: connections asked for
	kib       float64 // conns: server RSS per held connection, KiB; 0 unknown
	p50, p99  float64 // latency, ms
	clientCPU float64 // % of one core over the measured span, all load processes
	serverCPU float64 // likewise, the server's
	errors    int
	err       error
}

// results holds every run by server and part.
type results map[string]map[string][]sample

func (r results) add(key string, parts map[string]sample) {
	if r[key] == nil {
		r[key] = map[string][]sample{}
	}
	for p, x := range parts {
		r[key][p] = append(r[key][p], x)
	}
}

// measure runs scenario sc once against a fresh server s.
func measure(ctx context.Context, stderr io.Writer, o options, bins *benchrun.Binaries, s subject, sc string) map[string]sample {
	fail := func(err error) map[string]sample {
		if sc == scEcho {
			return map[string]sample{partSync: {err: err}, partAsync: {err: err}}
		}
		return map[string]sample{sc: {err: err}}
	}
	p, url, admin, err := s.start(ctx, stderr)
	if err != nil {
		return fail(err)
	}
	defer p.Stop()
	switch sc {
	case scEcho:
		out := map[string]sample{}
		for _, part := range []string{partSync, partAsync} {
			if s.sio {
				out[part] = sioEcho(ctx, o, url, p.PID(), part == partAsync)
			} else {
				out[part] = wsEcho(ctx, o, bins.Loadgen, url, admin, p.PID(), part == partAsync)
			}
		}
		return out
	case scConns:
		return map[string]sample{sc: holdConns(ctx, o, bins.Loadgen, url, s.sio, p.PID())}
	default:
		if s.sio {
			return map[string]sample{sc: sioLatency(ctx, o, bins.Loadgen, url, p.PID())}
		}
		return map[string]sample{sc: wsLatency(ctx, o, bins.Loadgen, url, p.PID())}
	}
}

// perCore is seconds of CPU over a span, in % of one core.
func perCore(cpu, span float64) float64 {
	if span <= 0 {
		return 0
	}
	return 100 * cpu / span
}

// wsEcho is the echo scenario over WebSocket: loadgen echo on one
// connection, sync or pipelined (the report's async: the sender does not
// wait for the echoes, up to -inflight of them).
func wsEcho(ctx context.Context, o options, loadgen, url, admin string, pid int, async bool) sample {
	mode := echo.Sync
	if async {
		mode = echo.Pipelined
	}
	rep, err := loadgenEcho(ctx, o, loadgen, url, admin, pid, "-c", "1", "-mode", mode, "-inflight", strconv.Itoa(o.inflight))
	if err != nil {
		return sample{err: err}
	}
	r := sample{rate: rep.MessagesPerSecond, held: rep.Connected, asked: 1, errors: countErrors(rep)}
	r.clientCPU = perCore(rep.ClientCPUSeconds, rep.WindowSeconds)
	if rep.Server != nil && rep.Server.CPUSeconds != nil {
		r.serverCPU = perCore(*rep.Server.CPUSeconds, rep.WindowSeconds)
	}
	if rep.Messages == 0 {
		r.err = fmt.Errorf("no echo in the window: %v", rep.Errors)
	}
	return r
}

// wsLatency is the latency scenario over WebSocket: loadgen echo's open
// loop at one message per connection per heartbeat, each message's round
// trip timed from when it was due.
func wsLatency(ctx context.Context, o options, loadgen, url string, pid int) sample {
	rate := max(1, int(float64(o.latencyConns)/o.heartbeat.Seconds()))
	rep, err := loadgenEcho(ctx, o, loadgen, url, "", pid, "-c", strconv.Itoa(o.latencyConns), "-mode", echo.Rate, "-rate", strconv.Itoa(rate))
	if err != nil {
		return sample{err: err}
	}
	r := sample{held: rep.Connected, asked: o.latencyConns, errors: countErrors(rep)}
	r.clientCPU = perCore(rep.ClientCPUSeconds, rep.WindowSeconds)
	if rep.Server != nil && rep.Server.CPUSeconds != nil {
		r.serverCPU = perCore(*rep.Server.CPUSeconds, rep.WindowSeconds)
	}
	if rep.P50ms == nil || rep.P99ms == nil {
		r.err = fmt.Errorf("no echo in the window: %v", rep.Errors)
		return r
	}
	r.p50, r.p99 = *rep.P50ms, *rep.P99ms
	return r
}

// loadgenEcho runs loadgen echo against url with the options' size,
// window and warmup, and the scenario's own flags.
func loadgenEcho(ctx context.Context, o options, loadgen, url, admin string, pid int, args ...string) (*echo.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, o.warmup+o.duration+echo.DefaultTimeout+2*time.Minute)
	defer cancel()
	args = append([]string{"echo", "-url", url, "-admin", admin, "-size", strconv.Itoa(o.size), "-text",
		"-duration", o.duration.String(), "-warmup", o.warmup.String(), "-pid", strconv.Itoa(pid), "-json", "-"}, args...)
	return benchrun.LoadgenReport[echo.Report](exec.CommandContext(ctx, loadgen, args...))
}

func countErrors(rep *echo.Report) int {
	n := 0
	for _, c := range rep.Errors {
		n += c.Count
	}
	return n
}

// sioLatency is the latency scenario over Socket.IO: loadgen sustain's
// clients each emit "message-with-ack" every heartbeat (the report's
// socket.io echo, acknowledged so that each round trip is timed), in one
// step held for the warmup and the window.
func sioLatency(ctx context.Context, o options, loadgen, url string, pid int) sample {
	stepLength := o.warmup + o.duration
	ctx, cancel := context.WithTimeout(ctx, stepLength+2*time.Minute)
	defer cancel()
	cpu0, _ := procfs.CPUSeconds(pid)
	start := time.Now()
	rep, err := benchrun.LoadgenReport[sustain.Report](exec.CommandContext(ctx, loadgen, "sustain", "-url", url,
		"-n", strconv.Itoa(o.latencyConns), "-steps", "1", "-step-duration", stepLength.String(),
		"-emit-interval", o.heartbeat.String(), "-event", "message-with-ack", "-hops=false", "-reconnect=false", "-json", "-"))
	if err != nil {
		return sample{err: err}
	}
	cpu1, _ := procfs.CPUSeconds(pid)
	span := time.Since(start).Seconds()
	if len(rep.Steps) == 0 {
		return sample{err: fmt.Errorf("loadgen sustain gave no step")}
	}
	st := rep.Steps[0]
	r := sample{held: int(st.Held), asked: o.latencyConns, errors: int(st.AckErrors + st.Lost)}
	r.clientCPU, r.serverCPU = perCore(rep.ClientCPUSeconds, span), perCore(cpu1-cpu0, span)
	if st.EmitLatency.Count == 0 {
		r.err = fmt.Errorf("no ack in the step: %v", st.Errors)
		return r
	}
	r.p50, r.p99 = st.EmitLatency.P50*1000, st.EmitLatency.P99*1000
	return r
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

// sioResult is the last line of sio-room-load.mjs.
type sioResult struct {
	Sockets    int      `json:"sockets"`
	Connected  int      `json:"connected"`
	Sent       uint64   `json:"sent"`
	Expected   uint64   `json:"expected"`
	Received   uint64   `json:"received"`
	Lost       uint64   `json:"lost"`
	Duplicates uint64   `json:"duplicates"`
	Window     float64  `json:"window_s"`
	P50        *float64 `json:"p50_ms"`
	P99        *float64 `json:"p99_ms"`
	ClientCPU  float64  `json:"client_cpu_s"`
}

// sioBaseline is the knowngood Socket.IO variant of the room broadcast:
// the connect model that adds nothing.
var sioBaseline = benchrun.SioBaseline

// The Socket.IO setups: knowngood `empty` and Node, two servers on a
// redis-server of their own (sio), or one process without Redis
// (sio-single), and the bare zishang520 server.
const (
	sioKnowngoodRedis = iota
	sioNodeRedis
	sioBare
	sioEmpty
	sioNode
	sioNativeRedis // empty on the native engine
	sioNative
	sioNativeGnet // the native engine on its gnet transport
)

// sioEngineFlags are the knowngood flags of each setup's engine.
var sioEngineFlags = map[int][]string{
	sioNativeRedis: {"-engine", "native"},
	sioNative:      {"-engine", "native"},
	sioNativeGnet:  {"-engine", "native-gnet"},
}

// sioSetup runs a Socket.IO room broadcast on setup.
func sioSetup(ctx context.Context, stderr io.Writer, o options, setup int) *row {
	r := &row{part: "Socket.IO room", clients: o.sockets, p50: -1, p99: -1, redisCPU: -1}
	servers, redisOn := sioLabel(r, setup)
	fmt.Fprintf(stderr, "%s, %s\n", r.part, r.setup)
	var procs benchrun.Procs
	defer procs.Stop()
	var redis *harness.Process
	var url string
	var err error
	if redisOn {
		if redis, url, err = harness.StartRedis(ctx); err != nil {
			r.err = err
			return r
		}
		procs.Add(redis)
	}
	var profiles []string // URL per server, "" for none
	var ps []*harness.Process
	for i := range servers {
		p, profile, err := startSioServer(ctx, stderr, o, setup, i, url)
		if err != nil {
			r.err = err
			return r
		}
		procs.Add(p)
		ps = append(ps, p)
		profiles = append(profiles, profile)
	}
	if v := versions(ps[0].Log()); v != "" {
		if servers > 1 {
			r.setup = "Node " + v + " x 2"
		} else {
			r.setup = "Node " + v
		}
	}
	w := &sioWindow{o: o, stderr: stderr, servers: ps, redis: redis, profiles: profiles, r: r}
	w.run(ctx)
	return r
}

// sioLabel names r after setup and says how many servers it runs and
// whether they share a redis-server.
func sioLabel(r *row, setup int) (servers int, redisOn bool) {
	switch setup {
	case sioKnowngoodRedis:
		r.setup = "knowngood " + sioBaseline + " x 2, Redis"
		return 2, true
	case sioNodeRedis:
		r.setup = "Node socket.io x 2, redis-adapter"
		return 2, true
	case sioBare:
		r.part, r.setup = "Socket.IO room, 1 process", benchrun.SioFloor
	case sioEmpty:
		r.part, r.setup = "Socket.IO room, 1 process", "knowngood "+sioBaseline
	case sioNode:
		r.part, r.setup = "Socket.IO room, 1 process", "Node socket.io"
	case sioNativeRedis:
		r.setup = "knowngood " + sioBaseline + " -engine native x 2, Redis"
		return 2, true
	case sioNative:
		r.part, r.setup = "Socket.IO room, 1 process", "knowngood "+sioBaseline+" -engine native"
	case sioNativeGnet:
		r.part, r.setup = "Socket.IO room, 1 process", "knowngood "+sioBaseline+" -engine native-gnet"
	}
	return 1, false
}

// startSioServer starts the i-th server of setup (on the redis-server at
// url, if any) and returns the URL of its CPU profile, "" for none.
func startSioServer(ctx context.Context, stderr io.Writer, o options, setup, i int, url string) (p *harness.Process, profile string, err error) {
	switch setup {
	case sioKnowngoodRedis, sioEmpty, sioNativeRedis, sioNative, sioNativeGnet:
		args := append([]string{"-variant", sioBaseline}, sioEngineFlags[setup]...)
		if url != "" {
			args = append(args, "-redis", url)
		}
		if o.profileDir != "" {
			args = append(args, "-pprof")
		}
		if p, err = benchrun.Start(ctx, stderr, nil, args...); err == nil && o.profileDir != "" {
			profile = p.AdminURL() + "/debug/pprof/profile"
		}
	case sioBare:
		var extra []string
		if o.profileDir != "" {
			extra = []string{"pprof"}
		}
		if p, err = benchrun.StartSioFloor(ctx, stderr, extra...); err == nil && o.profileDir != "" {
			profile = benchrun.SioFloorProfile(p)
		}
	case sioNodeRedis:
		p, err = harness.StartProcess(ctx, fmt.Sprintf("node sio-cluster-server %d", i+1),
			[]string{"node", "scripts/node/sio-cluster-server.mjs", "0", url})
		if err != nil {
			err = fmt.Errorf("%w (npm ci in scripts/ first?)", err)
		} else {
			fmt.Fprintf(stderr, "%s listening on %s\n", p.Name, p.Addr)
		}
	case sioNode:
		p, err = benchrun.StartNode(ctx, stderr, "sio-server.mjs", "node sio-server")
	}
	return p, profile, err
}

// sioWindow is one run of sio-room-load.mjs against servers: the server
// CPU is read when the client says its window starts and again once its
// last delivery has arrived (or its drain time passed). The profiles, if
// asked for, cover the window's o.duration.
type sioWindow struct {
	o        options
	stderr   io.Writer
	servers  []*harness.Process
	redis    *harness.Process
	profiles []string
	r        *row

	profiling   sync.WaitGroup
	profileMu   sync.Mutex
	profileErrs []error
}

// cpu reads the servers' CPU seconds, summed, and redis-server's.
func (w *sioWindow) cpu() (server, redisS float64, err error) {
	for _, p := range w.servers {
		s, err := benchrun.ProcCPUSeconds(p.PID())
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %v", p.Name, err)
		}
		server += s
	}
	if w.redis != nil {
		redisS, err = benchrun.ProcCPUSeconds(w.redis.PID())
	}
	return server, redisS, err
}

// run drives the client and fills in w.r.
func (w *sioWindow) run(ctx context.Context) {
	o, r := w.o, w.r
	cctx, cancel := context.WithTimeout(ctx, o.duration+3*time.Minute)
	defer cancel()
	args := []string{"scripts/clients/sio-room-load.mjs", "--sockets", strconv.Itoa(o.sockets), "--senders", strconv.Itoa(o.senders),
		"--rate", strconv.Itoa(o.rate), "--duration-ms", strconv.FormatInt(o.duration.Milliseconds(), 10)}
	for _, p := range w.servers {
		args = append(args, "--url", "http://"+p.Addr)
	}
	cmd := exec.CommandContext(cctx, "node", args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.err = err
		return
	}
	if err := cmd.Start(); err != nil {
		r.err = err
		return
	}
	s0, rc0, last := w.read(cctx, stdout)
	s1, rc1, cerr := w.cpu()
	w.profiling.Wait()
	if err := errors.Join(w.profileErrs...); err != nil {
		fmt.Fprintf(w.stderr, "profiles: %v\n", err)
	}
	if err := cmd.Wait(); err != nil {
		r.err = fmt.Errorf("sio-room-load: %v: %s", err, benchrun.LastLine(errOut.String()))
		return
	}
	if r.err == nil {
		r.err = cerr
	}
	if r.err != nil {
		return
	}
	w.fill(last, s1-s0, rc1-rc0)
}

// read follows the client's lines: at "start" it reads the CPU and starts
// the profiles; it returns the CPU then and the client's last line.
func (w *sioWindow) read(ctx context.Context, stdout io.Reader) (s0, rc0 float64, last []byte) {
	var err error
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Bytes()
		var m struct {
			Msg string `json:"msg"`
		}
		_ = json.Unmarshal(line, &m)
		switch m.Msg {
		case "start":
			if s0, rc0, err = w.cpu(); err != nil {
				w.r.err = err
			}
			w.startProfiles(ctx)
		case "end":
		default:
			last = append(last[:0], line...)
		}
	}
	return s0, rc0, last
}

// startProfiles fetches a CPU profile of each server that offers one,
// over the window, into o.profileDir.
func (w *sioWindow) startProfiles(ctx context.Context) {
	for i, u := range w.profiles {
		if u == "" {
			continue
		}
		path := filepath.Join(w.o.profileDir, fmt.Sprintf("%s-%d.pprof", strings.ReplaceAll(w.r.setup, " ", "-"), i+1))
		w.profiling.Go(func() {
			err := benchrun.Fetch(ctx, fmt.Sprintf("%s?seconds=%d", u, max(1, int(w.o.duration.Seconds()))), path)
			if err == nil {
				fmt.Fprintf(w.stderr, "CPU profile of %s: %s\n", w.servers[i].Name, path)
			}
			w.profileMu.Lock()
			w.profileErrs = append(w.profileErrs, err)
			w.profileMu.Unlock()
		})
	}
}

// fill puts the client's result line and the CPU over the window in w.r.
func (w *sioWindow) fill(last []byte, serverCPU, redisCPU float64) {
	r := w.r
	var res sioResult
	if err := json.Unmarshal(last, &res); err != nil {
		r.err = fmt.Errorf("sio-room-load output %q: %v", last, err)
		return
	}
	r.deliveries, r.lost, r.window, r.clientCPU = res.Received, res.Lost, res.Window, res.ClientCPU
	r.serverCPU = serverCPU
	if w.redis != nil {
		r.redisCPU = redisCPU
	}
	if res.P50 != nil && res.P99 != nil {
		r.p50, r.p99 = *res.P50, *res.P99
	}
	if res.Connected < res.Sockets {
		r.err = fmt.Errorf("%d of %d sockets connected at the end", res.Connected, res.Sockets)
	}
}

// versions reads socket.io's and the adapter's (if any) versions from a
// Node server's "listening" line; "" for another server.
func versions(log string) string {
	for line := range strings.SplitSeq(log, "\n") {
		var l struct {
			Msg      string `json:"msg"`
			SocketIO string `json:"socketio"`
			Adapter  string `json:"adapter"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" && l.SocketIO != "" {
			if l.Adapter == "" {
				return "socket.io " + l.SocketIO
			}
			return fmt.Sprintf("socket.io %s, redis-adapter %s", l.SocketIO, l.Adapter)
		}
	}
	return ""
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/procfs"
)

// holdConns is the conns scenario: -conns connections spread over -shards
// loadgen conns processes, each dialling from two loopback addresses of
// its own (so that no address runs short of ephemeral ports, and no
// process of descriptors) in batches that add up to -batch, all held
// idle. The server's resident memory is read before the first dial and
// once every shard says it holds its connections; their difference over
// the connections established is the memory one costs. The report's
// connections each had a heartbeat every 5 s: the latency scenario is
// that traffic; here they are idle, so the figure is what a connection
// costs to hold, which bounds how many fit.
func holdConns(ctx context.Context, o options, loadgen, url string, sio bool, pid int) sample {
	if sio {
		// Where loadgen conns opens Socket.IO sockets (over WebSocket,
		// the namespace joined) rather than bare WebSockets.
		url = "ws://" + strings.TrimPrefix(url, "http://") + "/socket.io/"
	}
	rss0, err := procfs.ResidentBytes(pid)
	if err != nil {
		return sample{err: err}
	}
	cpu0, _ := procfs.CPUSeconds(pid)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	type shard struct {
		out, errOut bytes.Buffer
		cmd         *exec.Cmd
		err         error
	}
	// Each shard says once that it holds its connections (how many it
	// established) or, when it ends without holding them, -1.
	ready := make(chan int, o.shards)
	shards := make([]*shard, o.shards)
	var wg sync.WaitGroup
	for i := range shards {
		sh := &shard{}
		var once sync.Once
		say := func(n int) { once.Do(func() { ready <- n }) }
		shards[i] = sh
		lo, hi := 2+2*i, 3+2*i
		sh.cmd = exec.CommandContext(ctx, loadgen, "conns", "-url", url, "-n", strconv.Itoa(o.conns),
			"-shard", fmt.Sprintf("%d/%d", i+1, o.shards), "-batch", strconv.Itoa(max(1, o.batch/o.shards)),
			"-sources", fmt.Sprintf("127.0.0.%d-127.0.0.%d", lo, hi), "-hold", o.hold.String(), "-loop", "-json", "-")
		sh.cmd.Stdout = &sh.out
		sh.cmd.Stderr = &holdWatch{w: &sh.errOut, holding: say}
		if err := sh.cmd.Start(); err != nil {
			return sample{err: err}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh.err = sh.cmd.Wait()
			say(-1)
		}()
	}

	// Read the server once every shard holds its connections or has
	// ended.
	established := 0
	for range o.shards {
		if n := <-ready; n > 0 {
			established += n
		}
	}
	rss1, _ := procfs.ResidentBytes(pid)
	cpu1, _ := procfs.CPUSeconds(pid)
	span := time.Since(start).Seconds()
	wg.Wait()

	r := sample{asked: o.conns, serverCPU: perCore(cpu1-cpu0, span)}
	for i, sh := range shards {
		rep, err := decodeConns(sh.out.Bytes(), sh.err)
		if err != nil {
			r.err = fmt.Errorf("shard %d: %v: %s", i+1, err, benchrun.LastLine(sh.errOut.String()))
			return r
		}
		r.held += rep.Held
		r.errors += rep.Failed + rep.Dropped
		r.clientCPU += perCore(rep.ClientCPUSeconds, span)
	}
	if established > 0 {
		r.kib = (rss1 - rss0) / float64(established) / 1024
	}
	return r
}

// holdWatch passes a loadgen conns process's stderr on to w and sends, on
// holding, the count of the line that says it holds its connections.
type holdWatch struct {
	w       io.Writer
	holding func(established int)
	line    []byte
}

var holdLine = regexp.MustCompile(`loadgen: (\d+) connections established in .*; holding them`)

func (h *holdWatch) Write(p []byte) (int, error) {
	h.line = append(h.line, p...)
	for {
		i := bytes.IndexByte(h.line, '\n')
		if i < 0 {
			break
		}
		if m := holdLine.FindSubmatch(h.line[:i]); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			h.holding(n)
		}
		h.line = h.line[i+1:]
	}
	return h.w.Write(p)
}

// decodeConns reads a loadgen conns report, which it prints also when the
// run failed its thresholds.
func decodeConns(out []byte, runErr error) (*conns.Report, error) {
	return benchrun.DecodeLoadgen[conns.Report](out, runErr)
}

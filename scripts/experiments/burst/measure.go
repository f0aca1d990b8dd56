package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/protocol"
)

// row is one burst: C connects of one shape against a fresh target with
// one backlog.
type row struct {
	shape   string
	c       int
	backlog int
	limit   int           // the accept queue's limit the target's /stats gave; -1 unknown
	rep     *conns.Report // loadgen conns's
	// The kernel's listen-queue counts over the burst (its network
	// namespace's), from the target's /stats.
	overflows, drops uint64
	// listenerDrops: the target's own listener's drops over the burst,
	// from ss; -1 unknown (listenerError says why).
	listenerDrops int64
	listenerError error
	// sources: the loopback addresses the connects came from; none: the
	// kernel's choice.
	sources string
	// Busy: the steady traffic's messages the target echoed over the burst.
	busy uint64
	// The wait for the TIME_WAIT sockets on the target's port after the
	// run, and how many were left when it ended.
	waited        time.Duration
	timeWaitLeft  int
	timeWaitError error
	err           error
}

// Bounds of the waits around a burst.
const (
	// busyWait bounds the wait for the steady traffic to reach the target.
	busyWait = 15 * time.Second
	// statsPoll spaces the reads of /stats and /proc/net/tcp while waiting.
	statsPoll = 100 * time.Millisecond
)

// measure runs one burst against a fresh target, then waits for its
// TIME_WAIT sockets.
func measure(ctx context.Context, stderr io.Writer, o options, backlog int, shape string, c int) row {
	r := row{shape: shape, c: c, backlog: backlog, limit: -1, listenerDrops: -1}
	port := 0
	r.err = func() error {
		p, wsURL, admin, err := benchrun.StartEchoTarget(ctx, stderr, o.variant, "-backlog", strconv.Itoa(backlog))
		if err != nil {
			return err
		}
		defer p.Stop()
		_, portText, _ := net.SplitHostPort(p.Addr)
		port, _ = strconv.Atoi(portText)
		if o.rate > 0 {
			stop, err := busy(ctx, o, wsURL, admin)
			if err != nil {
				return err
			}
			defer stop()
		}
		before, err := harness.ReadStats(nil, admin)
		if err != nil {
			return err
		}
		dropsBefore, dropsErr := listenerDrops(ctx, port)
		args := []string{"conns", "-admin", admin, "-n", strconv.Itoa(c), "-batch", strconv.Itoa(c), "-hold", "0s",
			"-timeout", o.timeout.String(), "-json", "-"}
		if shape == shapeGet {
			args = append(args, "-url", "http://"+p.Addr+"/", "-get", "-status", "426")
		} else {
			args = append(args, "-url", wsURL, "-echo", strconv.Itoa(o.echo))
		}
		if r.sources = sourcesFor(c); r.sources != "" {
			args = append(args, "-sources", r.sources)
		}
		loadgen, err := harness.Loadgen()
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, o.timeout+2*time.Minute)
		defer cancel()
		if r.rep, err = benchrun.LoadgenReport[conns.Report](exec.CommandContext(cctx, loadgen, args...)); err != nil {
			return err
		}
		after, err := harness.ReadStats(nil, admin)
		if err != nil {
			return err
		}
		dropsAfter, err := listenerDrops(ctx, port)
		if r.listenerError = errors.Join(dropsErr, err); r.listenerError == nil {
			r.listenerDrops = int64(dropsAfter - min(dropsBefore, dropsAfter))
		}
		d := protocol.Diff(before, after)
		r.busy = d.MessagesReceived
		if q := d.ListenQueue; q != nil {
			r.overflows, r.drops, r.limit = q.Overflows, q.Drops, q.Limit
		}
		return nil
	}()
	if port != 0 && o.timeWait > 0 {
		r.waited, r.timeWaitLeft, r.timeWaitError = awaitTimeWait(ctx, port, o.timeWait)
	}
	return r
}

// busy starts the steady traffic, loadgen echo at -rate over -rate-conns
// connections, and returns once the target has echoed some of it; stop
// ends it. Its own report is not read: it is the load, not the figure.
func busy(ctx context.Context, o options, url, admin string) (stop func(), err error) {
	loadgen, err := harness.Loadgen()
	if err != nil {
		return nil, err
	}
	// Longer than any burst: stop ends it.
	cmd := exec.Command(loadgen, "echo", "-url", url, "-admin", "", "-mode", "rate", "-rate", strconv.Itoa(o.rate),
		"-c", strconv.Itoa(o.rateConns), "-size", strconv.Itoa(o.echo), "-warmup", "0s", "-duration", "1h")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	first, err := harness.ReadStats(nil, admin)
	if err != nil {
		stop()
		return nil, err
	}
	// The traffic is up once the target has echoed a tenth of a second's.
	want := first.MessagesReceived + uint64(max(1, o.rate/10))
	deadline := time.Now().Add(busyWait)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			stop()
			return nil, fmt.Errorf("loadgen echo (the steady traffic) ended early: %v: %s", err, benchrun.LastLine(out.String()))
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(statsPoll):
		}
		if s, err := harness.ReadStats(nil, admin); err == nil && s.MessagesReceived >= want {
			return stop, nil
		}
	}
	stop()
	return nil, fmt.Errorf("the steady traffic did not reach the target within %s: %s", busyWait, benchrun.LastLine(out.String()))
}

// sourcesFor spreads c connects over loopback source addresses when one
// address's ephemeral ports would not leave room (three quarters of the
// range each, the rest for the kernel's other uses); "" when one does.
func sourcesFor(c int) string {
	lo, hi, err := procfs.LocalPortRange()
	if err != nil {
		lo, hi = 32768, 60999 // Linux's default range
	}
	per := max(1, (hi-lo+1)*3/4)
	n := (c + per - 1) / per
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1-127.0.%d.%d", n/256, n%256)
}

package echo

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// tcpTarget is the floor: every byte back as it came, no framing, one
// goroutine and one buffer per connection. A "message" in its metrics is
// one read.
type tcpTarget struct {
	cfg    TCPOptions
	m      *metrics.Metrics
	log    *slog.Logger
	gate   *conns.Gate
	conns  *conns.Registry[net.Conn]
	faults *faults.Injector
	wg     sync.WaitGroup

	listening conns.Listening
	accepted  chan struct{} // closed when Serve's accept loop is over
}

// tcpBuffer is each connection's read buffer: enough for a pipelining
// client's burst in one read.
const tcpBuffer = 16 << 10

// Disconnect reasons of echo-tcp, which has no close codes.
const (
	reasonEOF      = "eof"
	reasonError    = "error"
	reasonShutdown = "shutdown"
	reasonFault    = "fault_close_after" // -fault-close-after: no close code to send
	reasonIdle     = "idle_timeout"      // quiet for -ping-interval plus -ping-timeout
)

func newTCPTarget(cfg TCPOptions, m *metrics.Metrics, log *slog.Logger) *tcpTarget {
	return &tcpTarget{
		cfg: cfg, m: m, log: log,
		gate:     conns.NewGate(cfg.MaxConns),
		conns:    conns.NewRegistry[net.Conn](),
		faults:   faults.New(cfg.Faults, m),
		accepted: make(chan struct{}),
	}
}

// Serve accepts until Shutdown closes ln.
func (t *tcpTarget) Serve(ln net.Listener) error {
	defer close(t.accepted)
	if !t.listening.Start(ln) {
		return ln.Close()
	}
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Counted and logged by conns.GuardedListener.
			backoff = conns.AcceptBackoff(backoff)
			t.log.Debug("accept failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if t.faults.Reject() {
			// No protocol to answer 503 in: closed at once, as over
			// -max-conns.
			t.m.Handshake(protocol.ResultRejected, "tcp", 0)
			_ = c.Close()
			continue
		}
		if !t.gate.TryAcquire() {
			// No protocol to say why: the connection is closed at once.
			t.m.Handshake(protocol.ResultRejected, "tcp", 0)
			t.m.CapRefused()
			_ = c.Close()
			continue
		}
		if !t.conns.Add(c) {
			t.gate.Release()
			_ = c.Close()
			continue
		}
		t.wg.Go(func() { t.serve(c) })
	}
}

func (t *tcpTarget) serve(c net.Conn) {
	reason := reasonError
	defer func() {
		if v := recover(); v != nil {
			conns.LogPanic(t.log, t.cfg.Name, v)
		}
		_ = c.Close()
		t.gate.Release()
		t.m.Closed(reason)
		t.conns.Remove(c)
	}()
	t.m.Opened()
	buf := make([]byte, tcpBuffer)
	// A connection quiet for as long as a WebSocket target waits for an
	// answer to its ping (-ping-interval plus -ping-timeout) is closed: raw
	// TCP has no ping to ask whether the client is still there. The read
	// deadline is moved on at most every idle/16 rather than on each read,
	// which keeps it off the floor's per-read cost; a quiet client is
	// closed after between 15/16 of idle and idle.
	idle := t.cfg.Idle
	var armed time.Time
	var count faults.Count // reads towards -fault-close-after
	for {
		if now := time.Now(); now.Sub(armed) >= idle/16 {
			armed = now
			_ = c.SetReadDeadline(now.Add(idle))
		}
		n, err := c.Read(buf)
		if n > 0 {
			// The known-bad modes act on reads, echo-tcp's messages: the
			// reader itself waits out -fault-delay.
			t.m.Received(1, n)
			var fate faults.Fate
			if t.faults.On() {
				fate = t.faults.Message(&count)
			}
			if !fate.Drop {
				if fate.Delay > 0 && !t.wait(fate.Delay) {
					reason = reasonShutdown
					return
				}
				// Counted before it goes out, as the WebSocket targets count
				// their replies: a client that has its echo finds it
				// counted. A write that fails then ends the connection.
				t.m.Sent(1, n)
				if _, werr := c.Write(buf[:n]); werr != nil {
					reason = t.ended(werr)
					return
				}
			}
			if fate.Close {
				reason = reasonFault
				return
			}
		}
		if err != nil {
			reason = t.ended(err)
			return
		}
	}
}

// wait holds the reader for d (-fault-delay), or until the target shuts
// down: it reports whether d passed. A delay set long at run time then
// never holds a shutdown up.
func (t *tcpTarget) wait(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.accepted:
		return false
	}
}

func (t *tcpTarget) ended(err error) string {
	switch {
	case t.listening.Closing():
		return reasonShutdown
	case conns.ClientLeft(err):
		return reasonEOF
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.m.Timeout(metrics.ListenerTarget, metrics.StageIdle)
		return reasonIdle
	}
	return reasonError
}

// Shutdown stops accepting and closes every connection: with no protocol
// to say goodbye in, the client sees EOF.
func (t *tcpTarget) Shutdown(ctx context.Context) error {
	if ln := t.listening.Stop(); ln != nil {
		_ = ln.Close()
		<-t.accepted // no connection is added to wg after this
	}
	closeConn := func(c net.Conn) { _ = c.Close() }
	err := conns.Drain(ctx, t.conns, closeConn, closeConn)
	t.wg.Wait()
	return err
}

// Faults is the injector of the known-bad modes (control.Faulter): the
// admin listener's POST /control/fault switches them.
func (t *tcpTarget) Faults() *faults.Injector { return t.faults }

// Drop closes a random fraction of the connections open now, at once:
// raw TCP has no close code. The admin listener's POST /control/drop.
func (t *tcpTarget) Drop(fraction float64, _ control.How) (int, int) {
	open := t.conns.Snapshot()
	picked := control.Pick(len(open), fraction)
	for _, i := range picked {
		_ = open[i].Close()
	}
	return len(picked), len(open)
}

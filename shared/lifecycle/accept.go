package lifecycle

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"knowngood/shared/metrics"
)

// GuardedListener is the listener every target accepts from. A failed
// accept is counted (knowngood_accept_errors_total{reason}) and logged at
// most once a second, whoever accepts (net/http, gnet's accept loop,
// echo-tcp's). Out of descriptors (EMFILE, ENFILE), it refuses the oldest
// waiting connection cleanly: it frees a descriptor it keeps in reserve,
// accepts with it, closes the connection at once (the client sees the
// connection end, not a hang until its own timeout), and takes the reserve
// back. That is the way nginx and libuv get out of EMFILE: without it, the
// clients in the accept queue wait for a descriptor that only their own
// timeout frees. The error is returned as it came, so that the caller backs
// off; the connections already open are never touched.
type GuardedListener struct {
	net.Listener
	m   *metrics.Metrics
	log *slog.Logger

	mu      sync.Mutex
	reserve *os.File // nil when it could not be had back
	logged  time.Time
	missed  int // failures since the last log line
}

// Guard wraps ln; Close closes both ln and the reserve.
func Guard(ln net.Listener, m *metrics.Metrics, log *slog.Logger) *GuardedListener {
	g := &GuardedListener{Listener: ln, m: m, log: log}
	g.reserve, _ = os.Open(os.DevNull)
	return g
}

// Accept is the listener's Accept, guarded.
func (g *GuardedListener) Accept() (net.Conn, error) {
	c, err := g.Listener.Accept()
	if err == nil || errors.Is(err, net.ErrClosed) {
		return c, err
	}
	g.failed(err)
	return nil, err
}

// failed counts and logs one failed accept, and refuses a waiting
// connection when descriptors ran out.
func (g *GuardedListener) failed(err error) {
	reason := AcceptErrorReason(err)
	g.m.AcceptError(reason)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.missed++
	if now := time.Now(); now.Sub(g.logged) >= time.Second {
		g.log.Warn("accept failed; existing connections are served, new ones refused until descriptors are free",
			"err", err, "reason", reason, "failures", g.missed)
		g.logged, g.missed = now, 0
	}
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) || g.reserve == nil {
		return
	}
	dl, ok := g.Listener.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return
	}
	_ = g.reserve.Close()
	// The deadline: the waiting client may have gone meanwhile, and an
	// Accept with nothing to accept would wait for the next one.
	_ = dl.SetDeadline(time.Now().Add(10 * time.Millisecond))
	if c, err := g.Listener.Accept(); err == nil {
		_ = c.Close()
	}
	_ = dl.SetDeadline(time.Time{})
	g.reserve, _ = os.Open(os.DevNull)
}

// Close closes the listener and gives the reserve back.
func (g *GuardedListener) Close() error {
	err := g.Listener.Close()
	g.mu.Lock()
	if g.reserve != nil {
		_ = g.reserve.Close()
		g.reserve = nil
	}
	g.mu.Unlock()
	return err
}

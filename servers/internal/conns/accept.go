package conns

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/knowngood/knowngood/shared/metrics"
)

// GuardedListener is the listener every target accepts from. A failed
// accept is logged at most once a second, whoever accepts (net/http, gnet's
// accept loop, echo-tcp's). Out of descriptors (EMFILE, ENFILE), it refuses
// the waiting connections cleanly: it frees a descriptor it keeps in
// reserve, accepts with it, closes the connection at once (the client sees
// the connection end, not a hang until its own timeout), and so on for
// each one waiting, then takes the reserve back. That is the way nginx and
// libuv get out of EMFILE: without it, the clients in the accept queue wait
// for a descriptor that only their own timeout frees. The error is returned
// as it came, so that the caller backs off; the connections already open
// are never touched.
//
// knowngood_accept_errors_total{reason} counts connections, each refused
// one once, when it is refused: not failed accept calls. At the descriptor
// limit accept(2) fails whether or not a client waits (Linux allocates the
// descriptor first), so the accept loop's retries fail with EMFILE for as
// long as the limit is reached, with nobody refused; counting them would
// make the count grow while no client is turned away. An accept that fails
// for another reason counts once: it cost the connection it was for.
type GuardedListener struct {
	net.Listener
	m   *metrics.Metrics
	log *slog.Logger

	mu      sync.Mutex
	reserve *os.File // nil when it could not be had back
	logged  time.Time
	missed  int // failed accept calls since the last log line
	refused int // connections refused since the last log line
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

// failed logs one failed accept, refuses the waiting connections when
// descriptors ran out, and counts the connections refused.
func (g *GuardedListener) failed(err error) {
	reason := AcceptErrorReason(err)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.missed++
	if g.reserve == nil {
		g.reserve, _ = os.Open(os.DevNull)
	}
	if now := time.Now(); now.Sub(g.logged) >= time.Second {
		g.log.Warn("accept failed; existing connections are served, new ones refused until descriptors are free",
			"err", err, "reason", reason, "failures", g.missed, "refused", g.refused)
		g.logged, g.missed, g.refused = now, 0, 0
	}
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
		g.m.AcceptError(reason)
		return
	}
	if g.reserve == nil {
		return // the waiting clients wait: none is refused
	}
	dl, ok := g.Listener.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return
	}
	// Refuse every connection waiting now, one descriptor at a time, for
	// at most 50 ms: the accept loop backs off up to a second after this,
	// and a waiting client should not wait that long to learn its fate.
	// The deadline also ends an Accept that would wait for a new client.
	_ = g.reserve.Close()
	_ = dl.SetDeadline(time.Now().Add(50 * time.Millisecond))
	refused := 0
	for ; refused < 4096; refused++ {
		c, err := g.Listener.Accept()
		if err != nil {
			break
		}
		_ = c.Close()
		// Counted as it is refused: the loop may wait out its deadline
		// long after the client has seen its connection end.
		g.m.AcceptError(reason)
	}
	_ = dl.SetDeadline(time.Time{})
	g.reserve, _ = os.Open(os.DevNull)
	g.refused += refused
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

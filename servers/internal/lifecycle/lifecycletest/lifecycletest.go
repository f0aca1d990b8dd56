// Package lifecycletest runs a target in the test process, on 127.0.0.1,
// and shuts it down when the test ends.
package lifecycletest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Build is a variant's constructor, as in servers/main.go's table.
type Build func(config.Config, *metrics.Metrics, *slog.Logger) (lifecycle.Target, error)

// Options tune a start; the zero value is fine.
type Options struct {
	Tweak func(*config.Config)            // changes to config.Default()
	Log   io.Writer                       // the target's log; discarded if nil
	Wrap  func(net.Listener) net.Listener // TLS, say
	Admin bool                            // serve the admin handler too (AdminURL)
}

// Target is a target serving in the test process.
type Target struct {
	Addr     string
	AdminURL string           // http://HOST:PORT of the admin handler, with Options.Admin
	Metrics  *metrics.Metrics // nil with -metrics=false
	srv      lifecycle.Target
	done     chan error
}

// Start builds the variant name with a 5 s handshake timeout and o's
// tweaks, serves it, and shuts it down when the test ends.
func Start(t testing.TB, name string, b Build, o Options) *Target {
	t.Helper()
	cfg := config.Default()
	cfg.Variant = name
	cfg.HandshakeTimeout = 5 * time.Second
	if o.Tweak != nil {
		o.Tweak(&cfg)
	}
	var (
		reg *prometheus.Registry
		m   *metrics.Metrics
	)
	if cfg.Metrics {
		reg = metrics.NewRegistry()
		m = metrics.New(reg, name)
	}
	logTo := o.Log
	if logTo == nil {
		logTo = io.Discard
	}
	log := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: cfg.SlogLevel()}))
	srv, err := b(cfg, m, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, _, err := lifecycle.Listen("127.0.0.1:0", 0)
	if err != nil {
		t.Fatal(err)
	}
	tg := &Target{Addr: ln.Addr().String(), Metrics: m, srv: srv, done: make(chan error, 1)}
	if o.Admin {
		adm := httptest.NewServer(admin.Handler(admin.Options{Variant: cfg.Variant, Config: cfg.Effective()}, reg, m, nil))
		t.Cleanup(adm.Close)
		tg.AdminURL = adm.URL
	}
	ln = conns.Guard(ln, m, log)
	if o.Wrap != nil {
		ln = o.Wrap(ln)
	}
	go func() { tg.done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if t.Failed() && m != nil {
			// A client's error alone cannot say which side gave up
			// (a reset may be the target's handshake timeout or an
			// EMFILE); the target's own counters can.
			t.Logf("the target's own account: %s", tg.Account())
		}
		if err := tg.Shutdown(5 * time.Second); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return tg
}

// Shutdown stops the target (once) and returns Shutdown's or Serve's error.
func (tg *Target) Shutdown(timeout time.Duration) error {
	if tg.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := tg.srv.Shutdown(ctx)
	if serveErr := <-tg.done; err == nil {
		err = serveErr
	}
	tg.srv = nil
	return err
}

// Faults is the target's injector of the known-bad modes, which a test
// switches as the admin listener's POST /control/fault does; nil for a
// target without one.
func (tg *Target) Faults() *faults.Injector {
	if f, ok := tg.srv.(control.Faulter); ok {
		return f.Faults()
	}
	return nil
}

// URL is a ws:// URL of the target, on a path nobody chose.
func (tg *Target) URL() string { return "ws://" + tg.Addr + "/any/path?x=1" }

// Stats is the target's /stats document now.
func (tg *Target) Stats() protocol.Stats { return tg.Metrics.Snapshot() }

// Account is the part of the target's stats that says why it closed or
// refused connections, in one line.
func (tg *Target) Account() string {
	s := tg.Stats()
	return fmt.Sprintf("connections %d active, %d total; handshakes %v; timeouts %v; accept errors %v; refused at max-conns %d; disconnects %v",
		s.ConnectionsActive, s.ConnectionsTotal, s.Handshakes, s.Timeouts, s.AcceptErrors, s.MaxConnsRefused, s.Disconnects)
}

// Settled waits until no connection is open, then returns the stats.
func (tg *Target) Settled(t testing.TB) protocol.Stats {
	t.Helper()
	WaitFor(t, "every connection closed", func() bool { return tg.Stats().ConnectionsActive == 0 })
	return tg.Stats()
}

// WaitFor polls cond for up to 5 s.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitUpTo(t, 5*time.Second, what, cond)
}

// WaitUpTo polls cond for up to d.
func WaitUpTo(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

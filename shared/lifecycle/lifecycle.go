// Package lifecycle is the one way a target listens, caps its connections,
// and shuts down on SIGINT/SIGTERM.
package lifecycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"knowngood/shared/config"
	"knowngood/shared/metrics"
)

// Target is what a variant builds.
type Target interface {
	// Serve serves connections from ln until Shutdown is called, then
	// returns nil.
	Serve(ln net.Listener) error
	// Shutdown stops accepting, tells every client that the server is going
	// away, and returns once they are gone or ctx is done.
	Shutdown(ctx context.Context) error
}

// SignalContext is cancelled by the first SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Run listens on cfg.Addr and cfg.AdminAddr, serves target and admin until
// ctx is done, then shuts the target down within cfg.ShutdownTimeout.
//
// The target accepts from a GuardedListener (accept errors counted, logged
// once a second, EMFILE refused cleanly), in TLS with -tls-cert.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, m *metrics.Metrics, target Target, admin http.Handler) error {
	tcp, backlog, err := Listen(cfg.Addr, cfg.Backlog)
	if err != nil {
		return fmt.Errorf("-addr %s: %w", cfg.Addr, err)
	}
	var ln net.Listener = Guard(tcp, m, log)
	if cfg.TLSCert != "" {
		tc, err := TLSConfig(cfg)
		if err != nil {
			ln.Close()
			return err
		}
		ln = tls.NewListener(ln, tc)
	}
	adminAddr := "off"
	var adminSrv *http.Server
	if cfg.AdminAddr != "" {
		adminLn, err := net.Listen("tcp", cfg.AdminAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("-admin-addr %s: %w", cfg.AdminAddr, err)
		}
		adminAddr = adminLn.Addr().String()
		adminSrv = &http.Server{Handler: admin, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
		go func() { _ = adminSrv.Serve(adminLn) }()
		defer adminSrv.Close()
	}

	errc := make(chan error, 1)
	go func() { errc <- target.Serve(ln) }()
	log.Info("listening", "variant", cfg.Variant, "addr", ln.Addr().String(), "admin_addr", adminAddr,
		"backlog", backlog, "backlog_requested", cfg.Backlog, "somaxconn", Somaxconn(), "tls", cfg.TLSCert != "")

	select {
	case err := <-errc:
		return fmt.Errorf("serving %s: %w", cfg.Variant, err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err = target.Shutdown(sctx)
	if serveErr := <-errc; serveErr != nil && err == nil {
		err = serveErr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown took longer than -shutdown-timeout %s; the remaining connections were dropped", cfg.ShutdownTimeout)
	}
	if err == nil {
		log.Info("stopped")
	}
	return err
}

// TLSConfig is the server side of -tls-cert/-tls-key: HTTP/1.1 only, since
// WebSocket upgrades and Engine.IO ride on it.
func TLSConfig(cfg config.Config) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}, nil
}

// Listen opens a TCP listener with the given backlog (0 = the kernel's
// net.core.somaxconn) and returns the backlog in effect, which the kernel
// caps at somaxconn.
func Listen(addr string, backlog int) (net.Listener, int, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, 0, err
	}
	maxBacklog := Somaxconn()
	if backlog == 0 {
		// Go already listens with somaxconn.
		return ln, maxBacklog, nil
	}
	// Calling listen(2) again on a listening socket changes its backlog.
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err == nil {
		ctlErr := raw.Control(func(fd uintptr) { err = syscall.Listen(int(fd), backlog) })
		err = errors.Join(err, ctlErr)
	}
	if err != nil {
		ln.Close()
		return nil, 0, fmt.Errorf("setting backlog %d: %w", backlog, err)
	}
	return ln, min(backlog, maxBacklog), nil
}

// Somaxconn reads net.core.somaxconn; 4096 (the Linux default since 5.4)
// where it cannot be read.
func Somaxconn() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return 4096
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 4096
	}
	return n
}

// HTTPServer returns the http.Server every HTTP-based target uses: the
// header read deadline is -handshake-timeout, and net/http's own per-
// connection error lines go to the debug level, since a target logs nothing
// per connection by default.
func HTTPServer(cfg config.Config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.HandshakeTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// Package lifecycle is the one way a target process listens (with a
// backlog, behind conns.Guard), serves HTTP with its connections bounded in
// time (HTTPServer), and shuts down on SIGINT, SIGTERM or SIGHUP (Run).
// What a target does with each connection it holds is package conns.
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
	"sync"
	"syscall"
	"time"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/procfs"
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

// WithURL is target with the URL a client pastes to reach it, which the
// "listening" line then carries as url: url builds it from the address
// (host:port, with a loopback host for an unspecified one) and whether the
// listener speaks TLS.
func WithURL(target Target, url func(hostport string, tls bool) string) Target {
	return urlTarget{target, url}
}

type urlTarget struct {
	Target
	url func(hostport string, tls bool) string
}

// PasteAddr is a listen address as a client dials it: an unspecified host
// (":8080", "0.0.0.0:8080", "[::]:8080") becomes 127.0.0.1.
func PasteAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// ShutdownSignals start a graceful shutdown. SIGHUP is one of them: a
// target started from a terminal or under nohup-less supervision gets it
// when its session ends, and its default action would kill the process
// without a log line or a goodbye to its clients.
var ShutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// SignalError is the cause of a SignalContext's end: the signal received.
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return "received " + SignalName(e.Signal) }

// SignalName is a signal's conventional name: SIGTERM, SIGHUP, ...
func SignalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if name := signalName(s); name != "" {
			return name
		}
	}
	return sig.String()
}

// SignalContext is cancelled by the first of ShutdownSignals, with a
// *SignalError as its cause. Later signals are caught too, until stop is
// called: a second SIGTERM does not cut the shutdown short.
func SignalContext() (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, ShutdownSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(&SignalError{Signal: sig})
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel(context.Canceled)
		})
	}
}

// Options are what Run serves with.
type Options struct {
	Name            string // the variant, in the log
	Addr            string // -addr
	AdminAddr       string // -admin-addr; empty: no admin listener
	Backlog         int    // -backlog; 0 = the kernel's somaxconn
	TLSCert, TLSKey string // -tls-cert, -tls-key; empty: plain TCP
	// TLSClientCA (-tls-client-ca) requires a client certificate signed
	// by one of the authorities in this PEM file; empty: none asked for.
	TLSClientCA     string
	ShutdownTimeout time.Duration
	// Limits bound the HTTP listeners' clients (the admin listener's; the
	// target's TLS handshake within Limits.Header).
	Limits HTTPLimits
	// Listening, when set, is told where the target and the admin
	// listener listen (host:port; adminAddr "" when it is off) once both
	// do, before either serves: a port may be picked only then (:0).
	Listening func(addr, adminAddr string)
}

// Run listens on o.Addr and o.AdminAddr, serves target and admin until
// ctx is done, then shuts the target down within o.ShutdownTimeout.
//
// The target accepts from a GuardedListener (accept errors counted, logged
// once a second, EMFILE refused cleanly), in TLS with -tls-cert.
func Run(ctx context.Context, o Options, log *slog.Logger, m *metrics.Metrics, target Target, admin http.Handler) error {
	tcp, backlog, err := Listen(o.Addr, o.Backlog)
	if err != nil {
		return fmt.Errorf("-addr %s: %w", o.Addr, err)
	}
	m.SetListenQueue(listenQueue(tcp, backlog))
	var ln net.Listener = conns.Guard(tcp, m, log)
	if o.TLSCert != "" {
		tc, err := TLSConfig(o.TLSCert, o.TLSKey, o.TLSClientCA)
		if err != nil {
			ln.Close()
			return err
		}
		ln = NewTLSListener(ln, tc, o.Limits.Header, m)
	}
	adminAddr := "off"
	var adminLn net.Listener
	if o.AdminAddr != "" {
		adminLn, err = net.Listen("tcp", o.AdminAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("-admin-addr %s: %w", o.AdminAddr, err)
		}
		adminAddr = adminLn.Addr().String()
	}
	if o.Listening != nil {
		bound := ""
		if adminLn != nil {
			bound = adminAddr
		}
		o.Listening(ln.Addr().String(), bound)
	}
	if adminLn != nil {
		adminSrv := HTTPServer(o.Limits, admin, log)
		go func() { _ = ServeHTTP(adminSrv, adminLn, o.Limits.Body, m, metrics.ListenerAdmin) }()
		defer adminSrv.Close()
	}

	errc := make(chan error, 1)
	go func() { errc <- target.Serve(ln) }()
	attrs := []any{"variant", o.Name}
	if u, ok := target.(urlTarget); ok {
		attrs = append(attrs, "url", u.url(PasteAddr(ln.Addr().String()), o.TLSCert != ""))
	}
	log.Info("listening", append(attrs, "addr", ln.Addr().String(), "admin_addr", adminAddr,
		"backlog", backlog, "backlog_requested", o.Backlog, "somaxconn", Somaxconn(), "tls", o.TLSCert != "")...)

	select {
	case err := <-errc:
		return fmt.Errorf("serving %s: %w", o.Name, err)
	case <-ctx.Done():
	}
	attrs = []any{"timeout", o.ShutdownTimeout.String()}
	var sig *SignalError
	if errors.As(context.Cause(ctx), &sig) {
		attrs = append(attrs, "signal", SignalName(sig.Signal))
	}
	log.Info("shutting down", attrs...)
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	err = target.Shutdown(sctx)
	if serveErr := <-errc; serveErr != nil && err == nil {
		err = serveErr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown took longer than -shutdown-timeout %s; the remaining connections were dropped", o.ShutdownTimeout)
	}
	if err == nil {
		log.Info("stopped")
	}
	return err
}

// TLSConfig is the server side of -tls-cert/-tls-key: HTTP/1.1 only, since
// WebSocket upgrades and Engine.IO ride on it.
// With clientCA (-tls-client-ca) every client must show a certificate
// that one of its authorities signed.
func TLSConfig(certFile, keyFile, clientCA string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	if clientCA != "" {
		roots, err := loadClientCAs(clientCA)
		if err != nil {
			return nil, err
		}
		// Go refuses a client without a certificate in the handshake, with
		// the alert Node's TLS sends (certificate_required in TLS 1.3);
		// the certificate is checked after it (TLSListener), as Node does.
		tc.ClientAuth = tls.RequireAnyClientCert
		tc.ClientCAs = roots // named in the CertificateRequest, as Node's TLS does
	}
	return tc, nil
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
		ctlErr := raw.Control(func(fd uintptr) { err = relisten(fd, backlog) })
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
	n, err := procfs.SysctlInt("net.core.somaxconn")
	if err != nil {
		return 4096
	}
	return n
}

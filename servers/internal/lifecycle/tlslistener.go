package lifecycle

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/knowngood/knowngood/shared/metrics"
)

// TLSListener hands out TLS connections whose handshake is done. Each
// handshake runs on a goroutine of its own within the header timeout, so
// that a slow or silent client holds up no other, and one that fails is
// counted by cause (knowngood_tls_failures_total): the only place where
// every target, on net/http or gnet, sees why a TLS client was turned away.
type TLSListener struct {
	inner   net.Listener
	cfg     *tls.Config
	timeout time.Duration
	m       *metrics.Metrics

	ready chan net.Conn
	done  chan struct{}
	once  sync.Once

	mu       sync.Mutex
	inFlight map[net.Conn]struct{}
	wg       sync.WaitGroup
}

// NewTLSListener serves cfg's TLS on inner's connections; timeout bounds
// each handshake (-handshake-timeout).
func NewTLSListener(inner net.Listener, cfg *tls.Config, timeout time.Duration, m *metrics.Metrics) *TLSListener {
	l := &TLSListener{inner: inner, cfg: cfg, timeout: timeout, m: m,
		ready: make(chan net.Conn), done: make(chan struct{}), inFlight: map[net.Conn]struct{}{}}
	l.wg.Go(l.acceptLoop)
	return l
}

// Accept returns the next connection whose TLS handshake succeeded.
func (l *TLSListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, ends the handshakes under way, and waits for
// their goroutines.
func (l *TLSListener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.done)
		err = l.inner.Close()
		l.mu.Lock()
		for c := range l.inFlight {
			_ = c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}

// Addr is the listening address.
func (l *TLSListener) Addr() net.Addr { return l.inner.Addr() }

// acceptLoop accepts until the listener closes. A failed accept (the
// guard under it has counted it and refused what it could) is retried
// after a pause that doubles up to a second, as net/http's Serve does.
func (l *TLSListener) acceptLoop() {
	var pause time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(pause):
				continue
			case <-l.done:
				return
			}
		}
		pause = 0
		l.mu.Lock()
		select {
		case <-l.done:
			l.mu.Unlock()
			_ = c.Close()
			return
		default:
		}
		l.inFlight[c] = struct{}{}
		l.mu.Unlock()
		l.wg.Go(func() { l.handshake(c) })
	}
}

func (l *TLSListener) handshake(raw net.Conn) {
	defer func() {
		l.mu.Lock()
		delete(l.inFlight, raw)
		l.mu.Unlock()
	}()
	tc := tls.Server(raw, l.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err == nil && l.cfg.ClientCAs != nil {
		// Checked once the handshake is over and the connection closed
		// without an alert on a refusal, as Node's TLS server does with
		// rejectUnauthorized: its client sees the connection end.
		err = clientVerifier(l.cfg.ClientCAs)(tc.ConnectionState())
	}
	if err != nil {
		select {
		case <-l.done: // ended by Close: not the client's failure
		default:
			l.m.TLSFailure(tlsFailureCause(err))
		}
		_ = raw.Close()
		return
	}
	select {
	case l.ready <- tc:
	case <-l.done:
		_ = tc.Close()
	}
}

// Causes of a failed TLS handshake (knowngood_tls_failures_total{cause}).
const (
	TLSNoCertificate    = "no_certificate"    // -tls-client-ca: the client sent none
	TLSUnknownAuthority = "unknown_authority" // -tls-client-ca: not signed by it
	TLSExpired          = "expired"           // -tls-client-ca: outside its validity
	TLSBadCertificate   = "bad_certificate"   // -tls-client-ca: refused for another reason (its key usage, a broken chain)
	TLSTimeout          = "timeout"           // not done within -handshake-timeout
	TLSAbandoned        = "abandoned"         // the client left half-way
	TLSProtocol         = "protocol"          // anything else: not TLS, no common version or cipher
)

// clientCertError is a client certificate refused by verifyClient.
type clientCertError struct {
	cause string
	err   error
}

func (e *clientCertError) Error() string { return "client certificate refused: " + e.err.Error() }
func (e *clientCertError) Unwrap() error { return e.err }

func tlsFailureCause(err error) string {
	var cert *clientCertError
	var ne net.Error
	switch {
	case errors.As(err, &cert):
		return cert.cause
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return TLSTimeout
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return TLSAbandoned
	case err.Error() == "tls: client didn't provide a certificate":
		// crypto/tls has no type for it; the message is its one sign.
		return TLSNoCertificate
	}
	return TLSProtocol
}

// clientVerifier checks a client's certificate against the authorities
// of -tls-client-ca, and names the cause of a refusal. Go's own check
// (RequireAndVerifyClientCert) does the same verification but gives no
// cause a count can use, and answers with an alert where Node's server
// ends the connection.
func clientVerifier(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &clientCertError{TLSNoCertificate, errors.New("no certificate")}
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		var unknown x509.UnknownAuthorityError
		var invalid x509.CertificateInvalidError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &unknown):
			return &clientCertError{TLSUnknownAuthority, err}
		case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
			return &clientCertError{TLSExpired, err}
		}
		return &clientCertError{TLSBadCertificate, err}
	}
}

// loadClientCAs reads the PEM certificates of -tls-client-ca.
func loadClientCAs(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-tls-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-tls-client-ca %s: no PEM certificate in it", file)
	}
	return pool, nil
}

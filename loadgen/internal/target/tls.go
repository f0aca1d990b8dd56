package target

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// KindTLS is the error kind of a connection whose TLS handshake failed.
const KindTLS = "tls handshake"

// isTLSError reports whether err is the TLS layer's: a certificate not
// verified, a peer that does not speak TLS, or an alert from it.
func isTLSError(err error) bool {
	var (
		verify *tls.CertificateVerificationError
		record tls.RecordHeaderError
		alert  tls.AlertError
		unk    x509.UnknownAuthorityError
		host   x509.HostnameError
		inv    x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &alert) ||
		errors.As(err, &unk) || errors.As(err, &host) || errors.As(err, &inv)
}

// CheckTLS opens one TLS connection to u's address, completes the TLS
// handshake (no HTTP request, no WebSocket upgrade) and closes it, so that
// a certificate the client does not trust, or a target that does not
// speak TLS, ends the run before it starts with one line that says what to
// do, rather than as a report of N identical failures. Nothing for a
// ws:// or tcp:// URL. A target that cannot be reached at all is left to
// the run, whose report counts it like any failed dial.
func CheckTLS(ctx context.Context, u URL, o Options) error {
	if !u.TLS {
		return nil
	}
	d := &tls.Dialer{NetDialer: o.netDialer(), Config: o.TLS}
	c, err := d.DialContext(ctx, "tcp", u.Addr)
	if err == nil {
		// Say goodbye (close_notify) and wait, bounded, for the target to
		// close its end: the run's first read of /stats then finds this
		// connection gone, not still open.
		_ = c.SetDeadline(time.Now().Add(cmp.Or(o.Timeout, time.Second)))
		_ = c.(*tls.Conn).CloseWrite()
		_, _ = io.Copy(io.Discard, c)
		return c.Close()
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || ErrorKind(err) == KindTimeout || ctx.Err() != nil {
		return nil
	}
	return TLSError(u, err)
}

// TLSError says what a failed TLS handshake with u means, on one line,
// with what to do about it: the flag that makes the certificate trusted,
// or the URL of a target that does not speak TLS.
func TLSError(u URL, err error) error {
	var (
		unk  x509.UnknownAuthorityError
		host x509.HostnameError
		inv  x509.CertificateInvalidError
		vfy  *tls.CertificateVerificationError
	)
	plain := "ws://"
	for tls, bare := range map[string]string{"tls://": "tcp://", "https://": "http://"} {
		if strings.HasPrefix(u.String, tls) {
			plain = bare
		}
	}
	switch {
	case errors.As(err, &unk):
		return fmt.Errorf("%s: %w: pass -ca FILE or -insecure", u.String, unk)
	case errors.As(err, &host):
		return fmt.Errorf("%s: %w: give -url a host the certificate names, or pass -insecure", u.String, host)
	case errors.As(err, &inv):
		return fmt.Errorf("%s: %w: pass -insecure", u.String, inv)
	case errors.As(err, &vfy):
		return fmt.Errorf("%s: %w: pass -ca FILE or -insecure", u.String, vfy.Err)
	}
	return fmt.Errorf("%s: TLS handshake failed: %w: is the target serving TLS (-tls-cert)? If not, use %s", u.String, err, plain)
}

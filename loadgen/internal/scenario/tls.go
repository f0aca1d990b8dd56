package scenario

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/target"
)

// TLS is the flags every scenario has for a target in TLS (wss://,
// https://, tls://): -ca, the certificates to trust, and -insecure.
type TLS struct {
	CA       string // -ca: a PEM bundle to trust instead of the system's roots
	Insecure bool   // -insecure: the target's certificate is not verified
	roots    *x509.CertPool
}

// Register defines -ca and -insecure on fs; -ca's file is read, and
// checked to hold a certificate, as the flag is parsed.
func (t *TLS) Register(fs *flag.FlagSet) {
	fs.Func("ca", "`FILE` of PEM certificates to trust for a wss://, https:// or tls:// target, in place of the system's roots (a self-signed target's cert.pem)", func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return errors.New("no PEM certificate in it: want a file of -----BEGIN CERTIFICATE----- blocks")
		}
		t.CA, t.roots = path, pool
		return nil
	})
	fs.BoolVar(&t.Insecure, "insecure", false, "do not verify the certificate of a wss://, https:// or tls:// target (a warning says so)")
}

// Config is the client's TLS configuration: nil (the system's roots)
// unless -ca or -insecure was given.
func (t TLS) Config() *tls.Config {
	switch {
	case t.Insecure:
		return &tls.Config{InsecureSkipVerify: true} // asked for, and Check says so
	case t.roots != nil:
		return &tls.Config{RootCAs: t.roots}
	}
	return nil
}

// Check is what a run does first with a target in TLS: it says when
// -insecure leaves the certificate unverified, then completes one TLS
// handshake with the target (target.CheckTLS), whose failure (a
// certificate not trusted, a target that does not speak TLS) is the
// run's error. For a plain target, only a note that -ca and -insecure
// have nothing to do.
func (t TLS) Check(ctx context.Context, notes io.Writer, u target.URL, timeout time.Duration) error {
	if !u.TLS {
		if t.CA != "" || t.Insecure {
			fmt.Fprintf(notes, "loadgen: -ca and -insecure are for a target in TLS (wss://, https://, tls://); %s is plain, they are ignored\n", u.String)
		}
		return nil
	}
	if t.Insecure {
		fmt.Fprintf(notes, "loadgen: warning: -insecure: the certificate of %s is not verified\n", u.Addr)
	}
	return target.CheckTLS(ctx, u, target.Options{Timeout: timeout, TLS: t.Config()})
}

// CheckURL parses -url (the scenario's normalize has checked it) and
// makes TLS's Check on it: what a run does before its first connection.
func (c Common) CheckURL(ctx context.Context, notes io.Writer, timeout time.Duration) (target.URL, error) {
	u, err := target.ParseURL(c.URL)
	if err != nil {
		return u, err
	}
	return u, c.TLS.Check(ctx, notes, u, timeout)
}

package lifecycle_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/metrics"
)

// selfSigned is a server certificate for 127.0.0.1 and a client config
// that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, &tls.Config{RootCAs: pool}
}

// TestTLSListener: a client that never says hello holds up no other, is
// dropped at the handshake timeout and counted as one; a plain-TCP client
// is counted as a protocol failure; Close ends the handshakes under way
// without counting them.
func TestTLSListener(t *testing.T) {
	cert, client := selfSigned(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(prometheus.NewRegistry(), "test")
	const timeout = 500 * time.Millisecond
	ln := lifecycle.NewTLSListener(inner, &tls.Config{Certificates: []tls.Certificate{cert}}, timeout, m)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()

	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	good, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err != nil {
		t.Fatalf("a client behind a silent one: %v", err)
	}
	if _, err := good.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(good, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("echo %q, %v", buf, err)
	}
	good.Close()

	plain, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(plain, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	lifecycletest.WaitFor(t, "the silent client timed out and the plain one failed", func() bool {
		f := m.Snapshot().TLSFailures
		return f[lifecycle.TLSTimeout] == 1 && f[lifecycle.TLSProtocol] == 1
	})
	plain.Close()

	waiting, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	time.Sleep(50 * time.Millisecond) // most likely accepted by now; either way it must not count
	if err := ln.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if f := m.Snapshot().TLSFailures; len(f) != 2 {
		t.Errorf("tls failures %v after Close, want the two above only", f)
	}
}

package servers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/prereq"
	"github.com/knowngood/knowngood/shared/protocol"
)

// testCert makes a self-signed pair with scripts/gen-cert.sh and returns
// its paths and a client config that trusts it.
func testCert(t *testing.T) (certFile, keyFile string, tc *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("../scripts/gen-cert.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen-cert.sh: %v\n%s", err, out)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("gen-cert.sh made no PEM certificate")
	}
	return certFile, keyFile, &tls.Config{RootCAs: pool}
}

// TestTLS: with -tls-cert/-tls-key every variant serves wss:// (and
// https:// for Socket.IO polling), verified against the certificate by the
// Go clients (the gnet ones through their TLS bridge); the JavaScript and
// Python clients run over TLS once each.
func TestTLS(t *testing.T) {
	t.Parallel()
	cert, key, tc := testCert(t)
	for _, v := range allVariants {
		for _, r := range runsOf(v) {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel()
				args := append(r.args, "-tls-cert", cert, "-tls-key", key)
				s := startServer(t, args...)
				addr := strings.TrimPrefix(s.url, "http://")
				for i := range 3 {
					p, err := connect(v, addr, tc, 5*time.Second)
					if err != nil {
						t.Fatalf("over TLS: %v", err)
					}
					if err := p.echo("over TLS"); err != nil {
						t.Fatalf("echo %d over TLS: %v", i, err)
					}
					p.Close()
				}
				// A plain client on the TLS port fails, and the target goes on.
				if p, err := connect(v, addr, nil, 2*time.Second); err == nil {
					if p.echo("plain") == nil {
						t.Errorf("a plain client got an echo from the TLS port")
					}
					p.Close()
				}
				if st := s.stats(t); !isRawTCP(v) && st.Handshakes["ok"] < 3 {
					t.Errorf("handshakes %v, want 3 ok at least", st.Handshakes)
				}
			})
		}
	}
}

// TestTLSExternalClients: socket.io-client over https polling then wss,
// python-socketio over wss, Node's ws and Python's websockets over wss.
func TestTLSExternalClients(t *testing.T) {
	t.Parallel()
	need(t, "socket.io-client and ws (scripts/node_modules)", haveNodeClients() && haveNodeWSEcho())
	need(t, "python3-socketio and python3-websockets", havePythonSocketIO() && havePythonWSEcho())
	cert, key, _ := testCert(t)
	for _, engine := range sioEngines {
		sio := startServer(t, "-variant", "empty", "-engine", engine, "-tls-cert", cert, "-tls-key", key)
		https := "https://" + strings.TrimPrefix(sio.url, "http://")
		for _, c := range []struct{ client, transports string }{{"js", "polling"}, {"js", "polling,websocket"}, {"python", "websocket"}} {
			args := []string{"--url", https, "--n", "20", "--transports", c.transports, "--deadline-ms", "15000", "--echo", "--insecure"}
			r := harness.SioConnect(t, c.client, args...)
			if r.Connected != 20 || r.Echoed != 20 {
				t.Errorf("%s: %s over %s (TLS): %d connected, %d echoed; errors %v", engine, c.client, c.transports, r.Connected, r.Echoed, r.Errors)
			}
		}
	}
	// echo-gnet too: its TLS bridge is the one TLS path not on net/http.
	for _, v := range []string{"echo-coder", "echo-gnet"} {
		ws := startServer(t, "-variant", v, "-tls-cert", cert, "-tls-key", key)
		wss := "wss://" + strings.TrimPrefix(ws.url, "http://") + "/echo"
		for _, client := range []string{"ws", "websockets"} {
			r := runWSClient(t, client, "--url", wss, "--insecure")
			for c, result := range r.Cases {
				if result != "ok" {
					t.Errorf("%s: %s over wss: %s: %s", v, client, c, result)
				}
			}
			if len(r.Cases) == 0 {
				t.Errorf("%s: %s over wss ran no cases", v, client)
			}
		}
	}
}

// clientCA is an authority for client certificates, made in the test.
type clientCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newClientCA(t *testing.T, name string) *clientCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &clientCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a client certificate valid from notBefore to notAfter.
func (ca *clientCA) issue(t *testing.T, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "load client"},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestMutualTLS: with -tls-client-ca every variant serves only clients
// whose certificate the authority signed; a client with none, with one
// from another authority, or with an expired one is refused in the TLS
// handshake, and each refusal is counted by its cause in
// knowngood_tls_failures_total.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	cert, key, server := testCert(t)
	trusted, other := newClientCA(t, "trusted"), newClientCA(t, "other")
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	if err := os.WriteFile(caFile, trusted.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := trusted.issue(t, now.Add(-time.Minute), now.Add(time.Hour))
	clients := []struct {
		name  string
		certs []tls.Certificate
		cause string // "" = served
	}{
		{"signed by the authority", []tls.Certificate{good}, ""},
		{"no certificate", nil, "no_certificate"},
		{"another authority", []tls.Certificate{other.issue(t, now.Add(-time.Minute), now.Add(time.Hour))}, "unknown_authority"},
		{"expired", []tls.Certificate{trusted.issue(t, now.Add(-2*time.Hour), now.Add(-time.Hour))}, "expired"},
	}
	for _, v := range allVariants {
		for _, r := range runsOf(v) {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel()
				s := startServer(t, append(r.args, "-tls-cert", cert, "-tls-key", key, "-tls-client-ca", caFile)...)
				addr := strings.TrimPrefix(s.url, "http://")
				before := s.stats(t)
				want := map[string]uint64{}
				for _, c := range clients {
					tc := server.Clone()
					if len(c.certs) > 0 {
						// Sent whatever authorities the server names: Go's
						// client would otherwise send none that another
						// authority signed.
						tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c.certs[0], nil }
					}
					p, err := connect(v, addr, tc, 5*time.Second)
					if err == nil {
						err = p.echo("mutual")
						p.Close()
					}
					switch {
					case c.cause == "" && err != nil:
						t.Errorf("%s: %v", c.name, err)
					case c.cause != "" && err == nil:
						t.Errorf("%s: served, want refused", c.name)
					case c.cause != "":
						want[c.cause]++
					}
				}
				waitForStats(t, s, func(d protocol.Stats) bool {
					for cause, n := range want {
						if d.TLSFailures[cause] != n {
							return false
						}
					}
					return true
				}, before)
			})
		}
	}
}

// TestMutualTLSBesideNode: a client without a certificate, and one whose
// certificate another authority signed, see the same end from a target
// with -tls-client-ca as from a Node https server that requires client
// certificates of the same authority (scripts/node/mtls-server.mjs): the
// first the alert certificate_required, the second its connection closed
// without an alert once the handshake is over.
func TestMutualTLSBesideNode(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		prereq.Need(t, "node", err)
	}
	cert, key, server := testCert(t)
	trusted, other := newClientCA(t, "trusted"), newClientCA(t, "other")
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	if err := os.WriteFile(caFile, trusted.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	node := startNodeScript(t, nil, "mtls-server.mjs", cert, key, caFile).Addr
	target := startServer(t, "-variant", "echo-gorilla", "-tls-cert", cert, "-tls-key", key, "-tls-client-ca", caFile)
	foreign := other.issue(t, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	// alert is the error a client sees once its handshake is over: TLS 1.3
	// sends the server's verdict on the client's certificate after the
	// client's Finished, so it shows on the first read.
	alert := func(addr string, cert *tls.Certificate) string {
		tc := server.Clone()
		tc.InsecureSkipVerify = true // the Node server's name is not checked here
		if cert != nil {
			tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
		c, err := tls.Dial("tcp", addr, tc)
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
			_, err = c.Read(make([]byte, 1))
		}
		switch {
		case err == nil:
			return "served"
		case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
			// Ended by a FIN, or by an RST when the server had not read
			// what the client sent: either way without an alert.
			return "closed without an alert"
		}
		return err.Error()
	}
	for _, c := range []struct {
		name string
		cert *tls.Certificate
	}{{"no certificate", nil}, {"another authority", &foreign}} {
		node, ours := alert(node, c.cert), alert(target.Addr, c.cert)
		t.Logf("%s: Node %q, knowngood %q", c.name, node, ours)
		if node != ours || ours == "served" {
			t.Errorf("%s: Node's TLS answers %q, the target %q", c.name, node, ours)
		}
	}
}

package wsserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestTLS: with -tls-cert (lifecycle wraps the listener in TLS) gorilla and
// coder serve wss, and the handshake clock still starts at the first byte
// of the upgrade request; gnet, which reads the socket itself, refuses
// -tls-cert when it is built.
func TestTLS(t *testing.T) {
	t.Parallel()
	cert := selfSigned(t)
	wrap := func(ln net.Listener) net.Listener {
		return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	}
	for _, tgt := range libraries { // gnet through its TLS bridge
		t.Run(tgt.name, func(t *testing.T) {
			t.Parallel()
			tg := lifecycletest.Start(t, tgt.name, tgt.build, lifecycletest.Options{Log: io.Discard, Wrap: wrap})
			dialer := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, HandshakeTimeout: 5 * time.Second}
			conn, _, err := dialer.Dial("wss://"+tg.Addr+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if err := conn.WriteMessage(websocket.TextMessage, []byte("over TLS")); err != nil {
				t.Fatal(err)
			}
			if _, got, err := conn.ReadMessage(); err != nil || string(got) != "over TLS" {
				t.Fatalf("%q, %v", got, err)
			}
			if st := tg.Stats(); st.Handshakes[protocol.ResultOK] != 1 || st.HandshakeLatency.Count != 1 {
				t.Errorf("handshakes %v, latency count %d; want 1 ok, timed", st.Handshakes, st.HandshakeLatency.Count)
			}
		})
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

package echo_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"knowngood/servers/echo"
	"knowngood/shared/config"
	"knowngood/shared/protocol"
)

// syncBuffer is a log destination safe for the target's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGnetLoops: -loops sets the number of event loops, and connections
// spread over them are all served; gnet's own log lines go to the target's
// logger at debug level.
func TestGnetLoops(t *testing.T) {
	var log syncBuffer
	tg := startOn(t, "echo-gnet", echo.NewGnet, func(c *config.Config) { c.Gnet.Loops = 3; c.LogLevel = "debug" }, &log, nil)
	var conns []*websocket.Conn
	for range 7 {
		conn, _, err := websocket.DefaultDialer.Dial(tg.url(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	for i, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		msg := []byte(strings.Repeat("x", i+1))
		if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
		if _, got, err := conn.ReadMessage(); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("connection %d: %q, %v", i, got, err)
		}
	}
	if !strings.Contains(log.String(), "Launching gnet with 3 event-loops") {
		t.Errorf("gnet did not say it runs 3 event loops; log:\n%s", log.String())
	}
}

// TestTLS: with -tls-cert (lifecycle wraps the listener in TLS) gorilla and
// coder serve wss, and the handshake clock still starts at the first byte
// of the upgrade request; gnet, which reads the socket itself, refuses
// -tls-cert when it is built.
func TestTLS(t *testing.T) {
	cert := selfSigned(t)
	wrap := func(ln net.Listener) net.Listener {
		return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	}
	for _, tgt := range wsTargets { // gnet through its TLS bridge
		t.Run(tgt.name, func(t *testing.T) {
			tg := startOn(t, tgt.name, tgt.build, nil, io.Discard, wrap)
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
			if st := tg.stats(); st.Handshakes[protocol.ResultOK] != 1 || st.HandshakeLatency.Count != 1 {
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

// TestGnetSlowReader: gnet cannot stop reading from a client that does not
// read its echoes (gorilla and coder do, and TCP pushes back); past 16
// messages of -max-message waiting (at least 1 MiB) it closes with 1008
// rather than buffer without end.
func TestGnetSlowReader(t *testing.T) {
	tg := start(t, "echo-gnet", echo.NewGnet, func(c *config.Config) { c.MaxMessage = 64 << 10 })
	before := tg.stats()
	rc := dialTCP(t, tg.Addr)
	_ = rc.c.(*net.TCPConn).SetReadBuffer(64 << 10)
	rc.write([]byte(upgradeRequest()))
	if resp := rc.response(); resp.StatusCode != 101 {
		t.Fatal(resp.Status)
	}
	frame, err := ws.CompileFrame(ws.MaskFrame(ws.NewBinaryFrame(payload(64 << 10))))
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 256 && err == nil; i++ { // 16 MiB, more than the kernel buffers
			_, err = rc.c.Write(frame)
		}
		sent <- err
	}()
	if err := <-sent; err != nil {
		t.Fatalf("the server stopped reading: %v", err)
	}
	rc.expectClose(1008)
	check(t, "disconnects 1008", diff(before, tg.settled(t)).Disconnects["1008"], 1)
}

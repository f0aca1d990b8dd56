package target

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// tlsEcho is a WebSocket echo in TLS (httptest's certificate: 127.0.0.1,
// ::1 and example.com), and a client configuration that trusts it.
func tlsEcho(t *testing.T) (*httptest.Server, *tls.Config) {
	t.Helper()
	up := websocket.Upgrader{}
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil || c.WriteMessage(typ, msg) != nil {
				return
			}
		}
	}))
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return s, &tls.Config{RootCAs: pool}
}

func mustURL(t *testing.T, raw string) URL {
	t.Helper()
	u, err := ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestDialTLS: every dial speaks TLS to a wss:// or tls:// URL, verified
// against Options.TLS.
func TestDialTLS(t *testing.T) {
	s, trusted := tlsEcho(t)
	addr := s.Listener.Addr().String()
	ctx := context.Background()
	o := Options{Timeout: 5 * time.Second, TLS: trusted}

	g, err := DialWebSocket(ctx, mustURL(t, "wss://"+addr+"/"), o)
	if err != nil {
		t.Fatalf("gorilla over wss: %v", err)
	}
	if err := g.WriteMessage(websocket.TextMessage, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := g.ReadMessage(); err != nil || string(msg) != "hi" {
		t.Errorf("gorilla over wss: echo %q, %v", msg, err)
	}
	g.Close()

	c, _, err := DialWebSocketStream(ctx, mustURL(t, "wss://"+addr+"/"), o)
	if err != nil {
		t.Fatalf("gobwas over wss: %v", err)
	}
	if _, ok := c.(*tls.Conn); !ok {
		t.Errorf("gobwas over wss: a %T, want a *tls.Conn", c)
	}
	c.Close()

	r, err := DialTCP(ctx, mustURL(t, "tls://"+addr), o)
	if err != nil {
		t.Fatalf("tls://: %v", err)
	}
	if st := r.(*tls.Conn).ConnectionState(); !st.HandshakeComplete {
		t.Errorf("tls://: handshake not complete")
	}
	r.Close()

	// Not trusted: every dial fails, of kind KindTLS.
	_, err = DialWebSocket(ctx, mustURL(t, "wss://"+addr+"/"), Options{Timeout: 5 * time.Second})
	if ErrorKind(err) != KindTLS {
		t.Errorf("untrusted, gorilla: %v, kind %q", err, ErrorKind(err))
	}
	_, _, err = DialWebSocketStream(ctx, mustURL(t, "wss://"+addr+"/"), Options{Timeout: 5 * time.Second})
	if ErrorKind(err) != KindTLS {
		t.Errorf("untrusted, gobwas: %v, kind %q", err, ErrorKind(err))
	}
}

// TestCheckTLS: the one handshake before a run, and what its failures say.
func TestCheckTLS(t *testing.T) {
	s, trusted := tlsEcho(t)
	addr := s.Listener.Addr().String()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		url  string
		tls  *tls.Config
		want string // in the error; "" for none
	}{
		{"wss://" + addr + "/", trusted, ""},
		{"tls://" + addr, trusted, ""},
		{"wss://" + addr + "/", &tls.Config{InsecureSkipVerify: true}, ""},
		{"ws://" + plain.Listener.Addr().String() + "/", nil, ""}, // not TLS: nothing to check
		{"wss://" + closed + "/", nil, ""},                        // unreachable: the run counts it
		{"wss://" + addr + "/", nil, "wss://" + addr + "/: x509: certificate signed by unknown authority: pass -ca FILE or -insecure"},
		{"tls://" + addr, nil, "tls://" + addr + ": x509: certificate signed by unknown authority: pass -ca FILE or -insecure"},
		{"wss://localhost:" + port + "/", trusted, "not localhost: give -url a host the certificate names, or pass -insecure"},
		{"wss://" + plain.Listener.Addr().String() + "/", nil, "TLS handshake failed: tls: first record does not look like a TLS handshake: is the target serving TLS (-tls-cert)? If not, use ws://"},
		{"tls://" + plain.Listener.Addr().String(), nil, "If not, use tcp://"},
	} {
		err := CheckTLS(context.Background(), mustURL(t, tc.url), Options{Timeout: 2 * time.Second, TLS: tc.tls})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckTLS(%s): %v", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("CheckTLS(%s) = %v, want one line with %q", tc.url, err, tc.want)
		}
	}
}

package main

// Every scenario against targets in TLS (-tls-cert/-tls-key): the
// WebSocket echoes and the raw TCP echo, the broadcast targets in both
// modes, Socket.IO over wss and over https polling, conns; the
// certificate trusted with -ca, or not verified with -insecure; and the
// one-line errors of an untrusted certificate, of a plain target, and of
// a bad -ca.

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/tlstest"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
)

// tlsReport is what the tests read of every scenario's JSON report.
type tlsReport struct {
	URL       string            `json:"url"`
	Client    string            `json:"client"`
	Connected int               `json:"connected"`
	Echoed    int               `json:"echoed"`      // handshake
	Messages  int64             `json:"messages"`    // echo
	Received  uint64            `json:"received"`    // broadcast
	Expected  uint64            `json:"expected"`    // broadcast
	Lost      uint64            `json:"lost"`        // broadcast
	Est       int               `json:"established"` // conns
	Errors    map[string]any    `json:"errors"`
	Verdicts  []verdict.Verdict `json:"verdicts"`
}

// loadgenTLS runs loadgen in this process with -json - and returns its
// report and what it said on stderr.
func loadgenTLS(t *testing.T, args ...string) (tlsReport, string) {
	t.Helper()
	args = append(args, "-json", "-")
	var stdout, stderr strings.Builder
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("loadgen %q: exit %d\n%s", args, code, stderr.String())
	}
	var r tlsReport
	out := strings.TrimSpace(stdout.String())
	if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "\n")+1:]), &r); err != nil {
		t.Fatalf("loadgen %q printed %q: %v", args, out, err)
	}
	if len(r.Errors) != 0 {
		t.Errorf("loadgen %q: errors %v", args, r.Errors)
	}
	return r, stderr.String()
}

// startTLS runs variant in TLS with cert and key; the target's address
// and its (plain) admin listener's URL.
func startTLS(t *testing.T, cert, key, variant string, flags ...string) target {
	t.Helper()
	return startTarget(t, variant, append([]string{"-tls-cert", cert, "-tls-key", key}, flags...)...)
}

func TestTLSEcho(t *testing.T) {
	t.Parallel()
	cert, key := tlstest.Cert(t)
	for _, c := range []struct{ variant, scheme string }{
		{"echo-gorilla", "wss"}, {"echo-coder", "wss"}, {"echo-gnet", "wss"}, {"echo-tcp", "tls"},
	} {
		t.Run(c.variant, func(t *testing.T) {
			t.Parallel()
			tg := startTLS(t, cert, key, c.variant)
			url := c.scheme + "://" + tg.addr + "/"
			if c.scheme == "tls" {
				url = "tls://" + tg.addr
			}
			r, _ := loadgenTLS(t, "echo", "-url", url, "-admin", tg.admin, "-ca", cert, "-c", "4", "-mode", "pipelined", "-inflight", "4", "-duration", "300ms", "-warmup", "100ms")
			if r.Connected != 4 || r.Messages == 0 {
				t.Errorf("%s: %d of 4 connected, %d messages", url, r.Connected, r.Messages)
			}
			if c.scheme == "tls" {
				// (A raw TCP echo has no handshakes to agree on, and its
				// verdicts say so: messages are checked by the errors.)
				if !strings.Contains(r.Client, "crypto/tls") {
					t.Errorf("client %q, want crypto/tls named", r.Client)
				}
				return
			}
			has(t, r.Verdicts, verdict.Agree, "client and server agree on the messages")
		})
	}
}

func TestTLSBroadcast(t *testing.T) {
	t.Parallel()
	cert, key := tlstest.Cert(t)
	for _, v := range []string{"broadcast-gorilla", "broadcast-coder", "broadcast-gnet"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			tg := startTLS(t, cert, key, v, "-push-interval", "20ms")
			url := "wss://" + tg.addr + "/"
			r, _ := loadgenTLS(t, "broadcast", "-url", url, "-admin", tg.admin, "-ca", cert, "-subscribers", "30", "-senders", "2", "-rate", "40", "-duration", "500ms")
			if r.Connected != 32 || r.Expected == 0 || r.Received != r.Expected || r.Lost != 0 {
				t.Errorf("broadcast: %d of 32 connected, %d of %d received, %d lost", r.Connected, r.Received, r.Expected, r.Lost)
			}
			r, _ = loadgenTLS(t, "broadcast", "-url", url, "-admin", tg.admin, "-ca", cert, "-subscribers", "30", "-push", "-duration", "300ms")
			if r.Connected != 30 || r.Expected == 0 || r.Received != r.Expected || r.Lost != 0 {
				t.Errorf("push: %d of 30 connected, %d of %d received, %d lost", r.Connected, r.Received, r.Expected, r.Lost)
			}
		})
	}
}

func TestTLSHandshake(t *testing.T) {
	t.Parallel()
	cert, key := tlstest.Cert(t)
	for _, transport := range []string{"websocket", "polling", "polling,websocket"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			// A target for each: the runs go at once, and the verdict
			// compares one run's count with the target's.
			tg := startTLS(t, cert, key, "empty")
			r, _ := loadgenTLS(t, "handshake", "-url", "https://"+tg.addr, "-admin", tg.admin, "-ca", cert, "-n", "20", "-deadline", "10s", "-transport", transport)
			if r.Connected != 20 || r.Echoed != 20 {
				t.Errorf("%d of 20 connected, %d echoed", r.Connected, r.Echoed)
			}
			has(t, r.Verdicts, verdict.Agree, "client and server agree: 20 of 20 handshakes completed")
		})
	}
}

func TestTLSConns(t *testing.T) {
	t.Parallel()
	cert, key := tlstest.Cert(t)
	for _, c := range []struct{ variant, url string }{{"echo-gorilla", "wss://%s/"}, {"echo-tcp", "tls://%s"}} {
		t.Run(c.variant, func(t *testing.T) {
			t.Parallel()
			tg := startTLS(t, cert, key, c.variant)
			url := strings.Replace(c.url, "%s", tg.addr, 1)
			r, _ := loadgenTLS(t, "conns", "-url", url, "-admin", tg.admin, "-ca", cert, "-n", "20", "-batch", "10", "-hold", "100ms")
			if r.Est != 20 {
				t.Errorf("%s: %d of 20 established", url, r.Est)
			}
		})
	}
}

// TestTLSInsecure: -insecure trusts what the target shows, and says so.
func TestTLSInsecure(t *testing.T) {
	t.Parallel()
	cert, key := tlstest.Cert(t)
	tg := startTLS(t, cert, key, "echo-gorilla")
	r, stderr := loadgenTLS(t, "echo", "-url", "wss://"+tg.addr+"/", "-admin", tg.admin, "-insecure", "-c", "2", "-duration", "200ms", "-warmup", "0s")
	if r.Connected != 2 || r.Messages == 0 {
		t.Errorf("%d of 2 connected, %d messages", r.Connected, r.Messages)
	}
	if !strings.Contains(stderr, "warning: -insecure: the certificate of "+tg.addr+" is not verified") {
		t.Errorf("no warning for -insecure in %q", stderr)
	}
}

// TestTLSErrors: what a user gets wrong gets one line that says what to
// do, and no run.
func TestTLSErrors(t *testing.T) {
	t.Parallel()
	cert, key := tlstest.Cert(t)
	tls := startTLS(t, cert, key, "echo-gorilla")
	plain := startTarget(t, "echo-gorilla")
	sio := startTLS(t, cert, key, "empty")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wss, https := "wss://"+tls.addr+"/", "https://"+sio.addr
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"echo", "-url", wss, "-admin", ""}, 1, "loadgen echo: " + wss + ": x509: certificate signed by unknown authority: pass -ca FILE or -insecure"},
		{[]string{"conns", "-url", wss, "-admin", ""}, 1, "x509: certificate signed by unknown authority: pass -ca FILE or -insecure"},
		{[]string{"broadcast", "-url", wss, "-admin", ""}, 1, "x509: certificate signed by unknown authority: pass -ca FILE or -insecure"},
		{[]string{"handshake", "-url", https, "-admin", ""}, 1, "loadgen handshake: " + https + ": x509: certificate signed by unknown authority: pass -ca FILE or -insecure"},
		{[]string{"echo", "-url", "wss://localhost:" + portOf(tls.addr) + "/", "-admin", "", "-ca", cert}, 0, ""},
		{[]string{"echo", "-url", "wss://" + plain.addr + "/", "-admin", ""}, 1, "TLS handshake failed: tls: first record does not look like a TLS handshake: is the target serving TLS (-tls-cert)? If not, use ws://"},
		{[]string{"echo", "-url", wss, "-ca", filepath.Join(t.TempDir(), "missing.pem")}, 2, "loadgen echo: invalid value"},
		{[]string{"handshake", "-url", https, "-ca", notPEM}, 2, "flag -ca: no PEM certificate in it"},
	} {
		args := tc.args
		if tc.code == 0 {
			args = append(args, "-c", "1", "-duration", "100ms", "-warmup", "0s")
		}
		var stdout, stderr strings.Builder
		code := run(context.Background(), args, &stdout, &stderr)
		// conns and broadcast say the open-files budget first.
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != tc.code || !strings.Contains(lines[len(lines)-1], tc.stderr) {
			t.Errorf("loadgen %q: exit %d, stderr %q; want %d and one line with %q", args, code, stderr.String(), tc.code, tc.stderr)
		}
	}
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

package wsserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wstest"
)

// TestRefusals: a request that does not become a WebSocket connection gets
// the same answer from every target, with a one-line body, is counted as a
// failed handshake, and the connection is closed.
func TestRefusals(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, nil)
		before := tg.Stats()
		upgrade := strings.TrimSuffix(wstest.UpgradeRequest(), "\r\n")
		cases := []struct {
			name, request string
			status        int
		}{
			{"plain GET", "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n", http.StatusUpgradeRequired},
			{"plain POST", "POST /form HTTP/1.1\r\nHost: example.test\r\nContent-Length: 2\r\n\r\nhi", http.StatusUpgradeRequired},
			{"garbage", "this is not http\r\n\r\n", http.StatusBadRequest},
			{"garbage line", "hello\r\n", http.StatusBadRequest},
			{"upgrade by POST", strings.Replace(upgrade, "GET", "POST", 1) + "\r\n", http.StatusMethodNotAllowed},
			{"upgrade over HTTP/1.0", strings.Replace(upgrade, "HTTP/1.1", "HTTP/1.0", 1) + "\r\n", http.StatusBadRequest},
			{"no Connection: Upgrade", strings.Replace(upgrade, "Connection: Upgrade", "Connection: keep-alive", 1) + "\r\n", http.StatusBadRequest},
			{"version 8", strings.Replace(upgrade, "Version: 13", "Version: 8", 1) + "\r\n", http.StatusUpgradeRequired},
			{"short key", "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n\r\n", http.StatusBadRequest},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				rc := dialTCP(t, tg.Addr)
				rc.write([]byte(c.request))
				resp := rc.response()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != c.status {
					t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, c.status)
				}
				// net/http answers garbage itself, with a body of its own.
				if c.status != http.StatusBadRequest || strings.HasPrefix(c.name, "upgrade") {
					if s := string(body); strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
						t.Errorf("body %q, want one line", s)
					}
				}
				if c.status == http.StatusUpgradeRequired && resp.Header.Get("Sec-WebSocket-Version") != "13" {
					t.Errorf("426 without Sec-WebSocket-Version: 13: %v", resp.Header)
				}
				rc.expectEOF()
			})
		}
		waitFor(t, "every refusal counted", func() bool {
			return protocol.Diff(before, tg.Stats()).Handshakes[protocol.ResultFailed] == uint64(len(cases))
		})
		d := protocol.Diff(before, tg.Stats())
		check(t, "handshakes ok", d.Handshakes[protocol.ResultOK], 0)
		check(t, "connections_total", d.ConnectionsTotal, 0)
	})
}

// TestOriginAndCap: -origin admits only the listed origins (403 otherwise,
// counted as rejected); over -max-conns the answer is 503 before any
// upgrade, also rejected (and counted as refused at the cap, which the
// origin's 403s are not), and a place freed is taken again.
func TestOriginAndCap(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) {
			c.Origins = []string{"https://good.test"}
			c.MaxConns = 1
		})
		before := tg.Stats()
		try := func(origin string, want int) *rawConn {
			t.Helper()
			rc := dialTCP(t, tg.Addr)
			header := ""
			if origin != "" {
				header = "Origin: " + origin + "\r\n"
			}
			rc.write([]byte(wstest.UpgradeRequest(header)))
			if resp := rc.response(); resp.StatusCode != want {
				t.Fatalf("origin %q: status %d, want %d", origin, resp.StatusCode, want)
			}
			return rc
		}
		first := try("https://good.test", http.StatusSwitchingProtocols)
		try("https://good.test", http.StatusServiceUnavailable)
		try("https://evil.test", http.StatusForbidden)
		try("", http.StatusForbidden)
		first.send(ws.OpClose, true, closePayload(1000, ""))
		first.expectClose(1000)
		waitFor(t, "the place freed", func() bool { return tg.Stats().ConnectionsActive == 0 })
		again := try("https://good.test", http.StatusSwitchingProtocols)
		again.send(ws.OpText, true, []byte("still echoing"))
		if _, p := again.read(); string(p) != "still echoing" {
			t.Fatalf("echo %q", p)
		}
		d := protocol.Diff(before, tg.Stats())
		check(t, "handshakes ok", d.Handshakes[protocol.ResultOK], 2)
		check(t, "handshakes rejected", d.Handshakes[protocol.ResultRejected], 3)
		check(t, "rejected at the cap", d.MaxConnsRefused, 1)
	})
}

// TestSlowUpgrade: an upgrade request sent one byte at a time is buffered
// until it is complete; one that stops half-way is closed after
// -handshake-timeout and counted as failed; one whose client leaves
// half-way is counted as abandoned; a connection that never sends a byte
// is closed too, and is no handshake at all.
func TestSlowUpgrade(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		// The complete upgrade goes to a target of its own with a timeout
		// that a loaded machine's slow writes cannot reach: a few hundred
		// writes, each a wake-up, can take longer than the half-second the
		// half-sent ones are timed against.
		slow := start(t, name, b, func(c *config.Config) { c.HandshakeTimeout = 30 * time.Second })
		rc := dialTCP(t, slow.Addr)
		req := wstest.UpgradeRequest()
		for i := range len(req) {
			rc.write([]byte{req[i]})
			if i%4 == 0 {
				time.Sleep(time.Millisecond) // most bytes arrive on their own
			}
		}
		if resp := rc.response(); resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("byte-at-a-time upgrade: %s", resp.Status)
		}
		rc.send(ws.OpText, true, []byte("slow but complete"))
		if _, p := rc.read(); string(p) != "slow but complete" {
			t.Fatalf("echo %q", p)
		}
		check(t, "slow handshakes ok", slow.Stats().Handshakes[protocol.ResultOK], 1)

		const timeout = 500 * time.Millisecond
		tg := start(t, name, b, func(c *config.Config) { c.HandshakeTimeout = timeout })
		before := tg.Stats()
		half := dialTCP(t, tg.Addr)
		idle := dialTCP(t, tg.Addr)
		began := time.Now()
		half.write([]byte("GET / HTTP/1.1\r\nHost: example.test\r\nUpgrade: webs"))
		half.expectEOF()
		idle.expectEOF()
		if took := time.Since(began); took < timeout*8/10 || took > timeout+3*time.Second {
			t.Errorf("a half-sent upgrade was closed after %v, want about -handshake-timeout %v", took, timeout)
		}

		gone := dialTCP(t, tg.Addr)
		gone.write([]byte("GET / HTTP/1.1\r\nHost: exa"))
		time.Sleep(50 * time.Millisecond)
		gone.c.Close()

		waitFor(t, "the half-sent upgrades counted", func() bool {
			d := protocol.Diff(before, tg.Stats())
			return d.Handshakes[protocol.ResultFailed] == 1 && d.Handshakes[protocol.ResultAbandoned] == 1
		})
		d := protocol.Diff(before, tg.Stats())
		check(t, "handshakes ok", d.Handshakes[protocol.ResultOK], 0)
		check(t, "handshakes rejected", d.Handshakes[protocol.ResultRejected], 0)
	})
}

package wstest

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Dial opens a TCP connection to addr, closed when the test ends, with a
// deadline that keeps a silent target from hanging the test.
func Dial(t testing.TB, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// UpgradeRequest is a valid upgrade request with extra header lines, each
// ending in "\r\n".
func UpgradeRequest(extra ...string) string {
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	return "GET /chat?room=1 HTTP/1.1\r\nHost: example.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\nSec-WebSocket-Version: 13\r\n" +
		strings.Join(extra, "") + "\r\n"
}

// ReadResponse reads an HTTP response; a refusal's body is read in full
// and kept in resp.Body.
func ReadResponse(t testing.TB, br *bufio.Reader) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	return resp
}

// Upgraded dials addr and upgrades: what follows on the connection is
// frames.
func Upgraded(t testing.TB, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := Dial(t, addr)
	if _, err := io.WriteString(c, UpgradeRequest()); err != nil {
		t.Fatal(err)
	}
	if resp := ReadResponse(t, br); resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	return c, br
}

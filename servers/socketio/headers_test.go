package socketio_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestSlowHeaders: a client that sends its request a byte at a time and
// never finishes is dropped at -handshake-timeout and counted as a failed
// handshake (transport "unknown": the request never said).
func TestSlowHeaders(t *testing.T) { forWebSocket(t, testSlowHeaders) }

func testSlowHeaders(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.HandshakeTimeout = 500 * time.Millisecond })
	c, err := net.Dial("tcp", tg.url[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now()
	closed := make(chan struct{})
	go func() {
		_, _ = c.Read(make([]byte, 1)) // until the server closes
		close(closed)
	}()
	for _, b := range []byte("GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\n") {
		select {
		case <-closed:
		case <-time.After(100 * time.Millisecond):
			_, _ = c.Write([]byte{b})
			continue
		}
		break
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("not closed 5 s after a -handshake-timeout of 500ms")
	}
	if took := time.Since(began); took < 400*time.Millisecond {
		t.Errorf("closed after %v, before the -handshake-timeout", took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tg.metrics.Snapshot().Handshakes[protocol.ResultFailed] != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := tg.metrics.Snapshot(); st.Handshakes[protocol.ResultFailed] != 1 || st.HandshakesByTransport["unknown"][protocol.ResultFailed] != 1 {
		t.Errorf("handshakes %v by transport %v, want one failed (unknown)", st.Handshakes, st.HandshakesByTransport)
	}
}

// TestHeaderLimit: a request header over -max-header-bytes gets 431, on
// every engine, whether it ends or not (a header bomb is answered once
// the limit and net/http's 4096 bytes more are in, not held until the
// -handshake-timeout); one under it is served.
func TestHeaderLimit(t *testing.T) { forWebSocket(t, testHeaderLimit) }

func testHeaderLimit(t *testing.T, engine string) {
	const limit = 4 << 10
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.MaxHeaderBytes = limit })
	addr := strings.TrimPrefix(tg.url, "http://")
	head := "GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, c := range []struct {
		name string
		pad  int
		end  string
		want int
	}{
		{"under the limit", limit / 2, "\r\n\r\n", http.StatusSwitchingProtocols},
		{"over it", limit + 8<<10, "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"over it, unfinished", limit + 8<<10, "", http.StatusRequestHeaderFieldsTooLarge},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// Under the kernel's socket buffers: written whole before the
		// target answers, so that its answer is never cut by a reset.
		_, _ = conn.Write([]byte(head + "X-Pad: " + strings.Repeat("a", c.pad) + c.end))
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}

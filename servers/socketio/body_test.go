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
)

// TestBrokenBody: a polling POST whose body is cut short (the client
// closes its side mid-body) gets 400, one whose body never ends gets 408
// at -body-timeout, and either ends its session ("transport error"), as
// Node's engine.io ends a session whose data request failed. Before,
// both engines answered 200, as if the packets had been taken.
func TestBrokenBody(t *testing.T) { forEngines(t, testBrokenBody) }

func testBrokenBody(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.BodyTimeout = 300 * time.Millisecond })
	cases := []struct {
		name, framing string
		cut           bool
		want          int
	}{
		{"chunked, cut", "Transfer-Encoding: chunked\r\n\r\n5\r\n40", true, http.StatusBadRequest},
		{"sized, cut", "Content-Length: 10\r\n\r\n40", true, http.StatusBadRequest},
		{"chunked, timed out", "Transfer-Encoding: chunked\r\n\r\n5\r\n40", false, http.StatusRequestTimeout},
		{"sized, timed out", "Content-Length: 10\r\n\r\n40", false, http.StatusRequestTimeout},
	}
	for i, c := range cases {
		sid := pollingSession(t, tg)
		conn, err := net.Dial("tcp", strings.TrimPrefix(tg.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("POST /socket.io/?EIO=4&transport=polling&sid=" + sid + " HTTP/1.1\r\nHost: x\r\n" +
			"Content-Type: text/plain;charset=UTF-8\r\n" + c.framing))
		if c.cut {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
		if code, body := httpDo(t, http.MethodGet, pollURL(tg, sid), ""); code != http.StatusBadRequest {
			t.Errorf("%s: a GET after it: %d %q, want 400, the session ended", c.name, code, body)
		}
		waitFor(t, "the sessions' disconnects", func() bool {
			return tg.metrics.Snapshot().Disconnects["transport error"] == uint64(i+1)
		})
	}
}

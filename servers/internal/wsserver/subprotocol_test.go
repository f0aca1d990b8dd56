package wsserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wstest"
)

// dialProtocols connects coder/websocket's client offering protocols and
// returns the subprotocol the server answered with.
func dialProtocols(t *testing.T, url string, protocols ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		t.Fatalf("dial offering %v: %v", protocols, err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, p, err := c.Read(ctx); err != nil || string(p) != "hi" {
		t.Fatalf("echo %q, %v", p, err)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	return c.Subprotocol()
}

// refusedWith sends an upgrade with extra header lines and returns the
// status and body of the answer.
func refusedWith(t *testing.T, addr string, extra ...string) (int, string) {
	t.Helper()
	c, br := wstest.Dial(t, addr)
	if _, err := io.WriteString(c, wstest.UpgradeRequest(extra...)); err != nil {
		t.Fatal(err)
	}
	resp := wstest.ReadResponse(t, br)
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestSubprotocols: with -subprotocols the answer is the first
// subprotocol the client offered that the list has, as Node's ws picks
// (in the client's order); a client offering none of them still
// connects, without one; each connection that offered some is counted by
// the answer. A header that does not parse gets ws's 400. Without the
// flag the header is not read.
func TestSubprotocols(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) { c.Subprotocols = []string{"graphql-transport-ws", "mqtt"} })
		url := "ws://" + tg.Addr + "/"
		for _, c := range []struct {
			offer []string
			want  string
		}{
			{[]string{"v1.ocpp", "mqtt", "graphql-transport-ws"}, "mqtt"},
			{[]string{"graphql-transport-ws"}, "graphql-transport-ws"},
			{[]string{"v1.ocpp"}, ""},
			{nil, ""},
		} {
			if got := dialProtocols(t, url, c.offer...); got != c.want {
				t.Errorf("offering %v: answered %q, want %q", c.offer, got, c.want)
			}
		}
		for _, bad := range []string{"mqtt,,v1", "mqtt, mqtt", "a b", "mqtt,"} {
			if status, body := refusedWith(t, tg.Addr, "Sec-WebSocket-Protocol: "+bad+"\r\n"); status != http.StatusBadRequest || !strings.Contains(body, "Invalid Sec-WebSocket-Protocol header") {
				t.Errorf("Sec-WebSocket-Protocol %q: %d %q, want ws's 400", bad, status, body)
			}
		}
		waitFor(t, "every connection counted", func() bool { return tg.Stats().Handshakes[protocol.ResultOK] == 4 })
		got := tg.Stats().Subprotocols
		for sub, want := range map[string]uint64{"mqtt": 1, "graphql-transport-ws": 1, metrics.SubprotocolNone: 1} {
			if got[sub] != want {
				t.Errorf("subprotocols[%s] = %d, want %d (all: %v)", sub, got[sub], want, got)
			}
		}

		plain := start(t, name, b, nil)
		if got := dialProtocols(t, "ws://"+plain.Addr+"/", "mqtt"); got != "" {
			t.Errorf("without -subprotocols: answered %q", got)
		}
		if status, _ := refusedWith(t, plain.Addr, "Sec-WebSocket-Protocol: a,,b\r\n"); status != http.StatusSwitchingProtocols {
			t.Errorf("without -subprotocols a malformed header answered %d, want 101 (not read)", status)
		}
	})
}

// TestSubprotocolRequired: with -subprotocol-required a client that
// offers none of -subprotocols gets 401 naming the flag, counted as
// rejected; one that offers one connects.
func TestSubprotocolRequired(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) {
			c.Subprotocols = []string{"mqtt"}
			c.SubprotocolRequired = true
		})
		before := tg.Stats()
		for _, extra := range []string{"Sec-WebSocket-Protocol: v1.ocpp\r\n", ""} {
			status, body := refusedWith(t, tg.Addr, extra)
			if status != http.StatusUnauthorized || !strings.Contains(body, "-subprotocol-required") || !strings.Contains(body, "mqtt") {
				t.Errorf("offering %q: %d %q, want 401 naming -subprotocol-required and mqtt", extra, status, body)
			}
		}
		if got := dialProtocols(t, "ws://"+tg.Addr+"/", "v1.ocpp", "mqtt"); got != "mqtt" {
			t.Errorf("answered %q, want mqtt", got)
		}
		waitFor(t, "the refusals counted", func() bool {
			return protocol.Diff(before, tg.Stats()).Handshakes[protocol.ResultRejected] == 2
		})
	})
}

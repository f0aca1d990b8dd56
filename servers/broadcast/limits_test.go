package broadcast_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/config"
)

// TestLimitsCompressionShutdown: what the echo targets promise holds on the
// broadcast targets, which sit on the same code: with -compression the
// protocol works compressed; a message over -max-message is closed with
// 1009, invalid UTF-8 with 1007, a non-upgrade request gets 426; on
// Shutdown every client is closed with 1001.
func TestLimitsCompressionShutdown(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b lifecycletest.Build) {
		tg := start(t, name, b, func(c *config.Config) {
			c.MaxMessage = 1024
			c.Compression = true
		})
		d := dialer(0)
		d.EnableCompression = true
		c, res, err := d.Dial(tg.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if ext := res.Header.Get("Sec-WebSocket-Extensions"); !strings.Contains(ext, "permessage-deflate") {
			t.Errorf("no permessage-deflate negotiated: %q", ext)
		}
		stays := newClient(t, c, nil)
		stays.send(t, `{"type":"broadcast","payload":"`+strings.Repeat("z", 900)+`"}`)
		lifecycletest.WaitFor(t, "the compressed broadcastResult", func() bool { return stays.resultCount() == 1 })

		closeCode := func(op int, msg []byte) int {
			c, _, err := dialer(0).Dial(tg.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.WriteMessage(op, msg)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					var ce *websocket.CloseError
					if errors.As(err, &ce) {
						return ce.Code
					}
					return -1
				}
			}
		}
		if code := closeCode(websocket.TextMessage, []byte(`{"type":"echo","payload":"`+strings.Repeat("x", 1100)+`"}`)); code != websocket.CloseMessageTooBig {
			t.Errorf("a message over -max-message: close %d, want 1009", code)
		}
		if code := closeCode(websocket.TextMessage, []byte{'"', 0xff, '"'}); code != websocket.CloseInvalidFramePayloadData {
			t.Errorf("invalid UTF-8: close %d, want 1007", code)
		}

		resp, err := http.Get("http://" + tg.Addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUpgradeRequired {
			t.Errorf("a plain GET: %s, want 426", resp.Status)
		}

		if err := tg.Shutdown(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		<-stays.done
		stays.view(func(cl *client) {
			if cl.closeCode != websocket.CloseGoingAway {
				t.Errorf("on shutdown the client was closed with %d, want 1001", cl.closeCode)
			}
		})
	})
}

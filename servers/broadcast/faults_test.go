package broadcast_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestFaultModes: each known-bad mode on every broadcast target against the
// gorilla client, the client's count beside the server's faults_total.
func TestFaultModes(t *testing.T) {
	t.Parallel()
	echo := []byte(`{"type":"echo","payload":"x"}`)
	// answered sends n echoes, one at a time, and counts the answers that
	// come within wait each.
	answered := func(t *testing.T, c *websocket.Conn, n int, wait time.Duration) int {
		got := 0
		for range n {
			if err := c.WriteMessage(websocket.TextMessage, echo); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(wait))
			_, _, err := c.ReadMessage()
			if err == nil {
				got++
				continue
			}
			var ne interface{ Timeout() bool }
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatal(err)
			}
			return got // a timed-out gorilla connection is done: count what came
		}
		return got
	}
	forEach(t, func(t *testing.T, name string, b lifecycletest.Build) {
		t.Run("reject", func(t *testing.T) {
			t.Parallel()
			tg := start(t, name, b, func(c *config.Config) { c.Faults.Reject = 0.3 })
			const n = 60
			refused := 0
			for range n {
				c, resp, err := dialer(0).Dial(tg.URL(), nil)
				switch {
				case err == nil:
					c.Close()
				case resp != nil && resp.StatusCode == http.StatusServiceUnavailable:
					refused++
				default:
					t.Fatal(err)
				}
			}
			if got := tg.Stats().Faults[faults.KindReject]; got != uint64(refused) || refused == 0 || refused == n {
				t.Errorf("client: %d of %d refused with 503; server: %d reject faults", refused, n, got)
			}
		})
		t.Run("delay", func(t *testing.T) {
			t.Parallel()
			const delay = 100 * time.Millisecond
			tg := start(t, name, b, func(c *config.Config) { c.Faults.Delay = delay })
			c, _, err := dialer(0).Dial(tg.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			began := time.Now()
			if answered(t, c, 1, 5*time.Second) != 1 {
				t.Fatal("no echo")
			}
			if took := time.Since(began); took < delay*9/10 {
				t.Errorf("echo after %v, want at least -fault-delay %v", took, delay)
			}
		})
		t.Run("close-after", func(t *testing.T) {
			t.Parallel()
			tg := start(t, name, b, func(c *config.Config) { c.Faults.CloseAfter = 3 })
			c, _, err := dialer(0).Dial(tg.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := answered(t, c, 3, 5*time.Second); got != 3 {
				t.Fatalf("%d of 3 echoes", got)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _, err = c.ReadMessage()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != faults.CloseCode {
				t.Errorf("after 3 messages: %v, want close %d", err, faults.CloseCode)
			}
			if got := tg.Stats().Faults[faults.KindCloseAfter]; got != 1 {
				t.Errorf("close_after faults %d, want 1", got)
			}
		})
		t.Run("drop", func(t *testing.T) {
			t.Parallel()
			tg := start(t, name, b, func(c *config.Config) { c.Faults.Drop = 0.5 })
			c, _, err := dialer(0).Dial(tg.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			answers := make(chan string, 100) // one per echo at most: the reader never waits
			go func() {
				defer close(answers)
				for {
					_, data, err := c.ReadMessage()
					if err != nil {
						return
					}
					var msg protocol.BroadcastMessage
					_ = json.Unmarshal(data, &msg)
					answers <- string(msg.Payload)
				}
			}()
			drops := func() uint64 { return tg.Stats().Faults[faults.KindDrop] }
			// echo sends echo k and waits for its answer, or for the
			// server's drop count to go up past dropped: that says the
			// echo will not be answered, where a deadline could be missed
			// by a slow answer on a loaded machine. Each echo carries its
			// number, so that a late answer to a dropped one shows as
			// the wrong answer to the next.
			echo := func(k int, dropped uint64) bool {
				if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"echo","payload":%d}`, k)); err != nil {
					t.Fatal(err)
				}
				deadline := time.After(10 * time.Second)
				for drops() == dropped {
					select {
					case got, ok := <-answers:
						if !ok {
							t.Fatalf("echo %d: the connection ended", k)
						}
						if got != strconv.Itoa(k) {
							t.Fatalf("echo %d answered %s", k, got)
						}
						return true
					case <-deadline:
						t.Fatalf("echo %d neither answered nor dropped within 10s", k)
					case <-time.After(2 * time.Millisecond):
					}
				}
				return false
			}
			// Until the first drop: its answer never comes.
			k := 0
			for k < 50 && echo(k, 0) {
				k++
			}
			if n := drops(); n != 1 || k == 50 {
				t.Fatalf("%d answered before the first unanswered echo; server: %d drop faults, want 1", k, n)
			}
			// Then until one is answered: it must be answered as itself.
			for k++; k < 100 && !echo(k, drops()); k++ {
			}
		})
	})
}

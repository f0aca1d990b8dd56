package wsserver_test

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestFaults: each known-bad mode against a gorilla client on every
// library, the client's count beside the server's
// knowngood_faults_total{kind}.
func TestFaults(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		t.Run("reject", func(t *testing.T) {
			t.Parallel()
			tg := start(t, name, b, func(c *config.Config) { c.Faults.Reject = 0.2 })
			const n = 200
			refused := 0
			for range n {
				conn, resp, err := websocket.DefaultDialer.Dial(tg.URL(), nil)
				switch {
				case err == nil:
					conn.Close()
				case resp != nil && resp.StatusCode == http.StatusServiceUnavailable:
					refused++
				default:
					t.Fatalf("dial: %v", err)
				}
			}
			// gorilla and coder write the 101 before the target can count
			// the handshake: wait until all n are counted.
			waitFor(t, "every handshake counted", func() bool {
				h := tg.Stats().Handshakes
				return h[protocol.ResultOK]+h[protocol.ResultRejected] >= n
			})
			st := tg.Settled(t)
			t.Logf("%d of %d refused with 503", refused, n)
			check(t, "faults reject", st.Faults[faults.KindReject], uint64(refused))
			check(t, "handshakes rejected", st.Handshakes[protocol.ResultRejected], uint64(refused))
			check(t, "handshakes ok", st.Handshakes[protocol.ResultOK], uint64(n-refused))
			if refused < n/20 || refused > n*2/5 {
				t.Errorf("%d of %d refused, want about a fifth", refused, n)
			}
		})
		t.Run("delay", func(t *testing.T) {
			t.Parallel()
			const delay = 100 * time.Millisecond
			tg := start(t, name, b, func(c *config.Config) { c.Faults.Delay = delay })
			conn := dialWS(t, tg.URL())
			for i := range 5 {
				began := time.Now()
				echoOnce(t, conn, fmt.Sprint(i))
				if took := time.Since(began); took < delay*9/10 {
					t.Errorf("echo %d came back after %v, want at least -fault-delay %v", i, took, delay)
				}
			}
			// Pipelined messages wait side by side, in order, not one
			// after the other.
			began := time.Now()
			for i := range 10 {
				_ = conn.WriteMessage(websocket.TextMessage, []byte(strconv.Itoa(i)))
			}
			for i := range 10 {
				if _, got, err := conn.ReadMessage(); err != nil || string(got) != strconv.Itoa(i) {
					t.Fatalf("pipelined echo %d: %q, %v", i, got, err)
				}
			}
			if took := time.Since(began); took > 8*delay {
				t.Errorf("10 pipelined echoes took %v: the delays added up", took)
			}
			check(t, "faults delay", tg.Stats().Faults[faults.KindDelay], 15)
		})
		t.Run("close-after", func(t *testing.T) {
			t.Parallel()
			tg := start(t, name, b, func(c *config.Config) { c.Faults.CloseAfter = 10 })
			conn := dialWS(t, tg.URL())
			for i := range 20 {
				_ = conn.WriteMessage(websocket.TextMessage, []byte(strconv.Itoa(i)))
			}
			echoes := 0
			var err error
			for {
				if _, _, err = conn.ReadMessage(); err != nil {
					break
				}
				echoes++
			}
			if !websocket.IsCloseError(err, faults.CloseCode) || echoes != 10 {
				t.Errorf("%d echoes, then %v; want 10, then close 1011", echoes, err)
			}
			st := tg.Settled(t)
			check(t, "faults close_after", st.Faults[faults.KindCloseAfter], 1)
			check(t, "disconnects 1011", st.Disconnects["1011"], 1)
		})
		t.Run("drop", func(t *testing.T) {
			t.Parallel()
			tg := start(t, name, b, func(c *config.Config) { c.Faults.Drop = 0.05 })
			conn := dialWS(t, tg.URL())
			const n = 1000
			go func() {
				for i := range n {
					if conn.WriteMessage(websocket.TextMessage, []byte(strconv.Itoa(i))) != nil {
						return
					}
				}
			}()
			echoes := make(chan struct{}, n+1) // never full: the reader never waits
			go func() {
				_ = conn.SetReadDeadline(time.Time{}) // the test's Cleanup closes it
				for {
					if _, _, err := conn.ReadMessage(); err != nil {
						return
					}
					echoes <- struct{}{}
				}
			}()
			// Until every message is echoed or counted as dropped: the
			// server's count says when, not a second of silence, which a
			// loaded machine can pause for. The count is read when the
			// echoes pause, not after each one: a snapshot of the stats
			// costs more than an echo. Then a second more, for an echo no
			// message was owed.
			got := 0
			drops := func() uint64 { return tg.Stats().Faults[faults.KindDrop] }
			deadline := time.After(30 * time.Second)
			for uint64(got)+drops() < n {
			pause:
				for {
					select {
					case <-echoes:
						got++
					case <-time.After(5 * time.Millisecond):
						break pause
					case <-deadline:
						t.Fatalf("after 30s, %d echoed and %d dropped of %d", got, drops(), n)
					}
				}
			}
			for extra := time.After(time.Second); ; {
				select {
				case <-echoes:
					got++
					continue
				case <-extra:
				}
				break
			}
			dropped := drops()
			t.Logf("%d of %d echoed, %d dropped by the server", got, n, dropped)
			check(t, "echoed + dropped", uint64(got)+dropped, n)
			if dropped == 0 || dropped > n/5 {
				t.Errorf("%d of %d dropped, want about 5%%", dropped, n)
			}
		})
	})
}

func dialWS(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	return conn
}

func echoOnce(t *testing.T, conn *websocket.Conn, msg string) {
	t.Helper()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	if _, got, err := conn.ReadMessage(); err != nil || string(got) != msg {
		t.Fatalf("echo %q: %q, %v", msg, got, errors.Join(err))
	}
}

package wsserver_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wstest"
)

// TestHalfOpen: a client that upgrades and then goes silent (a machine
// that died, a network that went: nothing comes back, not even a pong) is
// pinged after -ping-interval and dropped after -ping-timeout, counted as
// ping_timeout; a client that answers pings but sends nothing stays.
func TestHalfOpen(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		const interval, timeout = 200 * time.Millisecond, 300 * time.Millisecond
		tg := start(t, name, b, func(c *config.Config) { c.PingInterval, c.PingTimeout = interval, timeout })
		before := tg.Stats()

		healthy := dialWS(t, tg.URL())
		pongs := make(chan struct{}, 100)
		healthy.SetPingHandler(func(data string) error {
			pongs <- struct{}{}
			return healthy.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		})
		echoes := make(chan string, 1)
		go func() {
			for {
				_, msg, err := healthy.ReadMessage()
				if err != nil {
					return
				}
				echoes <- string(msg)
			}
		}()

		dead := dialTCP(t, tg.Addr)
		dead.upgrade()
		began := time.Now()
		waitFor(t, "the silent client dropped", func() bool {
			return protocol.Diff(before, tg.Stats()).Disconnects["ping_timeout"] == 1
		})
		if took := time.Since(began); took < interval+timeout*8/10 {
			t.Errorf("dropped after %v, want no sooner than -ping-interval + -ping-timeout (%v)", took, interval+timeout)
		}
		// The healthy one has answered pings meanwhile and is still here.
		select {
		case <-pongs:
		case <-time.After(5 * time.Second):
			t.Fatal("the healthy client was never pinged")
		}
		time.Sleep(2 * (interval + timeout))
		if st := tg.Stats(); st.ConnectionsActive != 1 {
			t.Errorf("%d connections active, want the healthy one", st.ConnectionsActive)
		}
		_ = healthy.WriteMessage(websocket.TextMessage, []byte("still here"))
		select {
		case got := <-echoes:
			if got != "still here" {
				t.Errorf("echo %q", got)
			}
		case <-time.After(5 * time.Second):
			t.Error("the healthy client got no echo")
		}
	})
}

// TestBrokenClients: clients that vanish mid-message, by reset (RST) or by
// an abrupt close (a killed process: FIN with half a frame sent), are
// cleaned up and counted as 1006, and the target goes on serving.
func TestBrokenClients(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, nil)
		before := tg.Stats()
		const each = 5
		for i := range 2 * each {
			rc := dialTCP(t, tg.Addr)
			rc.upgrade()
			frame, err := ws.CompileFrame(ws.MaskFrame(ws.NewBinaryFrame(wstest.Payload(64 << 10))))
			if err != nil {
				t.Fatal(err)
			}
			rc.write(frame[:len(frame)/2]) // half a message
			if i%2 == 0 {
				_ = rc.c.(*net.TCPConn).SetLinger(0) // RST
			}
			rc.c.Close()
		}
		st := tg.Settled(t)
		d := protocol.Diff(before, st)
		check(t, "disconnects 1006", d.Disconnects["1006"], 2*each)
		check(t, "handshakes ok", d.Handshakes[protocol.ResultOK], 2*each)
		echoOnce(t, dialWS(t, tg.URL()), "after the broken ones")
	})
}

// TestShutdown: Shutdown sends every client 1001; a client that answers is
// gone at once, one that never answers is dropped when half the time is up,
// and Shutdown returns within its deadline either way.
func TestShutdown(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, nil)
		before := tg.Stats()
		conn, _, err := websocket.DefaultDialer.Dial(tg.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		closed := make(chan error, 1)
		go func() {
			_, _, err := conn.ReadMessage() // answers the close as gorilla does by default
			closed <- err
		}()
		deaf := rawDial(t, tg.Addr) // reads nothing until Shutdown is over
		waitFor(t, "both connections open", func() bool { return tg.Stats().ConnectionsActive == 2 })

		const timeout = 2 * time.Second
		began := time.Now()
		if err := tg.Shutdown(timeout); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if took := time.Since(began); took > timeout+500*time.Millisecond {
			t.Errorf("Shutdown took %v, want at most its %v deadline", took, timeout)
		}
		var ce *websocket.CloseError
		if err := <-closed; !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
			t.Errorf("gorilla client: %v, want close 1001", err)
		}
		if h, p := deaf.read(); h.OpCode != ws.OpClose || closeCode(p) != 1001 {
			t.Errorf("the deaf client got %v %v, want close 1001", h.OpCode, p)
		}
		deaf.expectEOF()
		d := protocol.Diff(before, tg.Stats())
		check(t, "disconnects 1001", d.Disconnects["1001"], 2)
		check(t, "connections_active", uint64(d.ConnectionsActive), 0)
	})
}

// TestMetricsOff: -metrics=false builds the same target with no
// instrumentation.
func TestMetricsOff(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) { c.Metrics = false })
		conn, _, err := websocket.DefaultDialer.Dial(tg.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := conn.WriteMessage(websocket.TextMessage, []byte("uncounted")); err != nil {
			t.Fatal(err)
		}
		if _, got, err := conn.ReadMessage(); err != nil || string(got) != "uncounted" {
			t.Fatalf("%q, %v", got, err)
		}
	})
}

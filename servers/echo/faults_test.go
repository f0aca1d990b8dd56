package echo_test

import (
	"net"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestTCPFaults: echo-tcp has no handshake and no messages of its own: a
// rejected connection is closed at once, and a read is a message.
func TestTCPFaults(t *testing.T) {
	t.Run("reject", func(t *testing.T) {
		tg := start(t, "echo-tcp", tcpBuild, func(c *config.Config) { c.Faults.Reject = 0.2 })
		const n = 100
		refused := 0
		for range n {
			c, err := net.Dial("tcp", tg.Addr)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write([]byte("x"))
			if _, err := c.Read(make([]byte, 1)); err != nil {
				refused++
			}
			c.Close()
		}
		st := tg.Settled(t)
		check(t, "faults reject", st.Faults[faults.KindReject], uint64(refused))
		check(t, "handshakes rejected", st.Handshakes[protocol.ResultRejected], uint64(refused))
	})
	t.Run("close-after and delay", func(t *testing.T) {
		const delay = 50 * time.Millisecond
		tg := start(t, "echo-tcp", tcpBuild, func(c *config.Config) { c.Faults.CloseAfter = 3; c.Faults.Delay = delay })
		c, err := net.Dial("tcp", tg.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 16)
		for i := range 3 {
			began := time.Now()
			_, _ = c.Write([]byte("ping"))
			if n, err := c.Read(buf); err != nil || string(buf[:n]) != "ping" {
				t.Fatalf("echo %d: %q, %v", i, buf[:n], err)
			}
			if took := time.Since(began); took < delay*9/10 {
				t.Errorf("echo %d after %v, want at least %v", i, took, delay)
			}
		}
		if _, err := c.Read(buf); err == nil {
			t.Errorf("the connection lives on after -fault-close-after 3")
		}
		st := tg.Settled(t)
		check(t, "faults close_after", st.Faults[faults.KindCloseAfter], 1)
		check(t, "faults delay", st.Faults[faults.KindDelay], 3)
		check(t, "disconnects fault_close_after", st.Disconnects["fault_close_after"], 1)
	})
}

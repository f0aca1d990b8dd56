package echo_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wstest"
)

// TestTCP: echo-tcp sends every byte back, counts reads as messages, caps
// connections by closing the ones over -max-conns, and closes every
// connection on Shutdown.
func TestTCP(t *testing.T) {
	tg := start(t, "echo-tcp", tcpBuild, func(c *config.Config) { c.MaxConns = 1 })
	before := tg.Stats()
	c, err := net.Dial("tcp", tg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	sent := append([]byte("hello"), wstest.Payload(256<<10)...)
	go func() { _, _ = c.Write(sent) }() // the echo comes back while this writes
	got := make([]byte, len(sent))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, sent) {
		t.Fatalf("echo: %v (equal %v)", err, bytes.Equal(got, sent))
	}

	over, err := net.Dial("tcp", tg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	_ = over.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := over.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("over -max-conns: read %d, %v; want the connection closed", n, err)
	}

	d := protocol.Diff(before, tg.Stats())
	check(t, "bytes_received", d.BytesReceived, uint64(len(sent)))
	check(t, "bytes_sent", d.BytesSent, uint64(len(sent)))
	if d.MessagesReceived == 0 || d.MessagesReceived != d.MessagesSent {
		t.Errorf("messages received %d, sent %d; want as many reads as writes", d.MessagesReceived, d.MessagesSent)
	}
	check(t, "rejected", d.Handshakes[protocol.ResultRejected], 1)
	check(t, "rejected at the cap", d.MaxConnsRefused, 1)

	if err := tg.Shutdown(2 * time.Second); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("after Shutdown: read %d, %v; want EOF", n, err)
	}
	check(t, "disconnects shutdown", protocol.Diff(before, tg.Stats()).Disconnects["shutdown"], 1)
}

package echo_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"knowngood/servers/echo"
	"knowngood/shared/config"
	"knowngood/shared/protocol"
)

// TestShutdown: Shutdown sends every client 1001; a client that answers is
// gone at once, one that never answers is dropped when half the time is up,
// and Shutdown returns within its deadline either way.
func TestShutdown(t *testing.T) {
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, nil)
		before := tg.stats()
		conn, _, err := websocket.DefaultDialer.Dial(tg.url(), nil)
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
		waitFor(t, "both connections open", func() bool { return tg.stats().ConnectionsActive == 2 })

		const timeout = 2 * time.Second
		began := time.Now()
		if err := tg.shutdown(timeout); err != nil {
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
		d := diff(before, tg.stats())
		check(t, "disconnects 1001", d.Disconnects["1001"], 2)
		check(t, "connections_active", uint64(d.ConnectionsActive), 0)
	})
}

// TestTCP: echo-tcp sends every byte back, counts reads as messages, caps
// connections by closing the ones over -max-conns, and closes every
// connection on Shutdown.
func TestTCP(t *testing.T) {
	tg := start(t, "echo-tcp", echo.NewTCP, func(c *config.Config) { c.MaxConns = 1 })
	before := tg.stats()
	c, err := net.Dial("tcp", tg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	sent := append([]byte("hello"), payload(256<<10)...)
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

	d := diff(before, tg.stats())
	check(t, "bytes_received", d.BytesReceived, uint64(len(sent)))
	check(t, "bytes_sent", d.BytesSent, uint64(len(sent)))
	if d.MessagesReceived == 0 || d.MessagesReceived != d.MessagesSent {
		t.Errorf("messages received %d, sent %d; want as many reads as writes", d.MessagesReceived, d.MessagesSent)
	}
	check(t, "rejected", d.Handshakes[protocol.ResultRejected], 1)

	if err := tg.shutdown(2 * time.Second); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("after Shutdown: read %d, %v; want EOF", n, err)
	}
	check(t, "disconnects shutdown", diff(before, tg.stats()).Disconnects["shutdown"], 1)
}

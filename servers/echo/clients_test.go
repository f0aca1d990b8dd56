package echo_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	coder "github.com/coder/websocket"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wstest"
)

// tally counts what a test sent, to compare with the server's figures.
type tally struct{ messages, bytes uint64 }

func (tl *tally) add(p []byte) {
	tl.messages++
	tl.bytes += uint64(len(p))
}

// checkStats compares the stats a test produced with what it did: one
// connection, every message and byte echoed, one disconnect with reason.
func checkStats(t *testing.T, d protocol.Stats, tl tally, reason string) {
	t.Helper()
	check(t, "connections_total", d.ConnectionsTotal, 1)
	check(t, "handshakes ok", d.Handshakes[protocol.ResultOK], 1)
	check(t, "handshakes websocket ok", d.HandshakesByTransport["websocket"][protocol.ResultOK], 1)
	check(t, "handshake latency count", d.HandshakeLatency.Count, 1)
	check(t, "messages_received", d.MessagesReceived, tl.messages)
	check(t, "messages_sent", d.MessagesSent, tl.messages)
	check(t, "bytes_received", d.BytesReceived, tl.bytes)
	check(t, "bytes_sent", d.BytesSent, tl.bytes)
	check(t, "disconnects "+reason, d.Disconnects[reason], 1)
	if len(d.Disconnects) != 1 {
		t.Errorf("disconnects %v, want only %s", d.Disconnects, reason)
	}
}

// TestGorillaClient: text, binary, empty, multi-byte UTF-8, 1 MiB and
// fragmented messages come back as they went, ping gets pong, the close
// code comes back, and the server counts exactly that.
func TestGorillaClient(t *testing.T) {
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, nil)
		before := tg.Stats()
		// A small write buffer makes gorilla fragment larger messages.
		dialer := websocket.Dialer{HandshakeTimeout: 5 * time.Second, WriteBufferSize: 1024}
		conn, resp, err := dialer.Dial(tg.URL(), http.Header{"Origin": {"https://anywhere.test"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
			t.Errorf("extension %q negotiated without -compression", ext)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var tl tally
		roundTrip := func(what string, op int, p []byte, write func() error) {
			t.Helper()
			if err := write(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			gotOp, got, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if gotOp != op || !bytes.Equal(got, p) {
				t.Fatalf("%s: got type %d, %d bytes; want type %d, %d bytes", what, gotOp, len(got), op, len(p))
			}
			tl.add(p)
		}
		echo := func(what string, op int, p []byte) {
			t.Helper()
			roundTrip(what, op, p, func() error { return conn.WriteMessage(op, p) })
		}
		echo("text", websocket.TextMessage, []byte("hello"))
		echo("binary", websocket.BinaryMessage, []byte{0, 1, 0xfe, 0xff})
		echo("empty text", websocket.TextMessage, nil)
		echo("empty binary", websocket.BinaryMessage, nil)
		echo("multi-byte UTF-8", websocket.TextMessage, []byte(strings.Repeat("héllo wörld ✓ ", 100)))
		echo("1 MiB", websocket.BinaryMessage, wstest.Payload(1<<20))
		frag := wstest.Payload(5000)
		roundTrip("fragmented", websocket.TextMessage, frag, func() error {
			w, err := conn.NextWriter(websocket.TextMessage)
			if err != nil {
				return err
			}
			for _, part := range [][]byte{frag[:1500], frag[1500:4000], frag[4000:]} {
				if _, err := w.Write(part); err != nil {
					return err
				}
			}
			return w.Close()
		})

		pongs := make(chan string, 1)
		conn.SetPongHandler(func(s string) error { pongs <- s; return nil })
		if err := conn.WriteControl(websocket.PingMessage, []byte("ping-1"), time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		echo("after the ping", websocket.TextMessage, []byte("after"))
		select {
		case p := <-pongs:
			if p != "ping-1" {
				t.Errorf("pong %q, want ping-1", p)
			}
		default:
			t.Error("no pong before the next echo")
		}

		if err := conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4000, "bye"), time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		_, _, err = conn.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4000 {
			t.Fatalf("after the client's close 4000: %v; want the server's close 4000", err)
		}
		conn.Close()
		checkStats(t, protocol.Diff(before, tg.Settled(t)), tl, "4000")
	})
}

// TestCoderClient: the same with coder/websocket, whose Writer sends every
// Write as a frame of its own.
func TestCoderClient(t *testing.T) {
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, nil)
		before := tg.Stats()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, _, err := coder.Dial(ctx, tg.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		c.SetReadLimit(2 << 20)
		var tl tally
		roundTrip := func(what string, typ coder.MessageType, p []byte, write func() error) {
			t.Helper()
			if err := write(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			gotTyp, got, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if gotTyp != typ || !bytes.Equal(got, p) {
				t.Fatalf("%s: got %v, %d bytes; want %v, %d bytes", what, gotTyp, len(got), typ, len(p))
			}
			tl.add(p)
		}
		echo := func(what string, typ coder.MessageType, p []byte) {
			t.Helper()
			roundTrip(what, typ, p, func() error { return c.Write(ctx, typ, p) })
		}
		echo("text", coder.MessageText, []byte("hello"))
		echo("binary", coder.MessageBinary, []byte{0, 1, 0xfe, 0xff})
		echo("empty text", coder.MessageText, nil)
		echo("empty binary", coder.MessageBinary, nil)
		echo("1 MiB", coder.MessageText, wstest.Payload(1<<20))
		frag := wstest.Payload(3000)
		roundTrip("fragmented", coder.MessageBinary, frag, func() error {
			w, err := c.Writer(ctx, coder.MessageBinary)
			if err != nil {
				return err
			}
			for _, part := range [][]byte{frag[:1000], frag[1000:2000], frag[2000:]} {
				if _, err := w.Write(part); err != nil {
					return err
				}
			}
			return w.Close()
		})

		// coder's Ping needs a reader running to see the pong.
		type result struct {
			typ coder.MessageType
			p   []byte
			err error
		}
		read := make(chan result, 1)
		go func() {
			typ, p, err := c.Read(ctx)
			read <- result{typ, p, err}
		}()
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
		after := []byte("after the ping")
		if err := c.Write(ctx, coder.MessageText, after); err != nil {
			t.Fatal(err)
		}
		if r := <-read; r.err != nil || r.typ != coder.MessageText || !bytes.Equal(r.p, after) {
			t.Fatalf("after the ping: %v %q %v", r.typ, r.p, r.err)
		}
		tl.add(after)

		// Close returns nil only if the server answers with the same code.
		if err := c.Close(coder.StatusNormalClosure, ""); err != nil {
			t.Fatalf("close: %v", err)
		}
		checkStats(t, protocol.Diff(before, tg.Settled(t)), tl, "1000")
	})
}

package echo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// readFrame reads one frame whole (ws.ReadFrame is deprecated for not
// bounding its length): these tests' frames are small.
func readFrame(r io.Reader) (ws.Frame, error) {
	h, err := ws.ReadHeader(r)
	if err != nil {
		return ws.Frame{}, err
	}
	if h.Length > 1<<20 {
		return ws.Frame{}, errors.New("a frame over 1 MiB")
	}
	f := ws.Frame{Header: h, Payload: make([]byte, h.Length)}
	_, err = io.ReadFull(r, f.Payload)
	return f, err
}

// TestWebSocketFrames: the client's own framing against frames that the
// echo targets send only rarely: a fragmented message with control frames
// between its fragments, a ping (answered with a pong), a message longer
// than the buffer, a text message, and a close with its code.
func TestWebSocketFrames(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverErr := make(chan error, 1)
	go func() {
		serverErr <- func() error {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := ws.Upgrade(c); err != nil {
				return err
			}
			msg, op, err := wsutil.ReadClientData(c)
			if err != nil || op != ws.OpBinary || string(msg) != "hello" {
				return errors.Join(err, errors.New("not the binary hello sent"))
			}
			for _, f := range []ws.Frame{
				ws.NewFrame(ws.OpBinary, false, []byte("he")),
				ws.NewPingFrame([]byte("p")),
				ws.NewFrame(ws.OpContinuation, false, []byte("l")),
				ws.NewPongFrame(nil),
				ws.NewFrame(ws.OpContinuation, true, []byte("lo")),
				ws.NewBinaryFrame([]byte("0123456789")),
				ws.NewTextFrame([]byte("text")),
			} {
				if err := ws.WriteFrame(c, f); err != nil {
					return err
				}
			}
			pong, err := readFrame(c)
			if err != nil {
				return err
			}
			if ws.Cipher(pong.Payload, pong.Header.Mask, 0); pong.Header.OpCode != ws.OpPong || string(pong.Payload) != "p" || !pong.Header.Masked {
				return errors.New("no masked pong with the ping's payload")
			}
			return ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusInternalServerError, "enough")))
		}()
	}()

	cfg := testConfig("ws://"+ln.Addr().String()+"/", Sync)
	c, err := dialer(cfg)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	c.queue([]byte("hello"))
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 5)
	if n, err := c.recv(p); n != 5 || err != nil || string(p) != "hello" {
		t.Errorf("fragmented: %d %q %v; want 5 \"hello\"", n, p, err)
	}
	p = make([]byte, 4)
	if n, err := c.recv(p); n != 10 || err != nil || string(p) != "0123" {
		t.Errorf("longer than the buffer: %d %q %v; want 10 \"0123\"", n, p, err)
	}
	if _, err := c.recv(p); !errors.Is(err, errMismatch) {
		t.Errorf("text: %v, want a mismatch", err)
	}
	_ = c.(*wsConn).c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.recv(p); err == nil || !strings.Contains(err.Error(), "1011") {
		t.Errorf("close: %v, want the code 1011", err)
	}
	if err := <-serverErr; err != nil {
		t.Error("server:", err)
	}
}

// TestWebSocketFrameOut: a queued batch is masked frames that unmask to
// the messages, back to back.
func TestWebSocketFrameOut(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := &wsConn{whdr: make([]byte, ws.MaxHeaderSize)}
	for _, m := range []string{"a", strings.Repeat("b", 200), strings.Repeat("c", 70000)} {
		w.queue([]byte(m))
	}
	out.Write(w.out)
	checkClientFrames(t, &out, []string{"a", strings.Repeat("b", 200), strings.Repeat("c", 70000)})
}

// checkClientFrames checks that r holds, and holds only, one masked binary
// frame for each of msgs, in order.
func checkClientFrames(t *testing.T, r interface {
	io.Reader
	Len() int
}, msgs []string) {
	t.Helper()
	for _, want := range msgs {
		f, err := readFrame(r)
		if err != nil {
			t.Fatal(err)
		}
		ws.Cipher(f.Payload, f.Header.Mask, 0)
		if !f.Header.Fin || !f.Header.Masked || f.Header.OpCode != ws.OpBinary || string(f.Payload) != want {
			t.Errorf("frame %+v with %d bytes, want a masked binary frame of %d", f.Header, len(f.Payload), len(want))
		}
	}
	if r.Len() != 0 {
		t.Errorf("%d bytes more", r.Len())
	}
}

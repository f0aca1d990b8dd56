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
	checkClientFrames(t, &out, ws.OpBinary, []string{"a", strings.Repeat("b", 200), strings.Repeat("c", 70000)})

	// -text: text frames.
	w.out, w.text = w.out[:0], true
	w.queue([]byte("0123"))
	w.queue([]byte(strings.Repeat("d", 300)))
	out.Write(w.out)
	checkClientFrames(t, &out, ws.OpText, []string{"0123", strings.Repeat("d", 300)})
}

// checkClientFrames checks that r holds, and holds only, one masked frame
// of opcode op for each of msgs, in order.
func checkClientFrames(t *testing.T, r interface {
	io.Reader
	Len() int
}, op ws.OpCode, msgs []string) {
	t.Helper()
	for _, want := range msgs {
		f, err := readFrame(r)
		if err != nil {
			t.Fatal(err)
		}
		ws.Cipher(f.Payload, f.Header.Mask, 0)
		if !f.Header.Fin || !f.Header.Masked || f.Header.OpCode != op || string(f.Payload) != want {
			t.Errorf("frame %+v with %d bytes, want a masked %s frame of %d", f.Header, len(f.Payload), opName(op), len(want))
		}
	}
	if r.Len() != 0 {
		t.Errorf("%d bytes more", r.Len())
	}
}

// TestTextPayload: a -text message is ASCII with its sequence number in
// hex at its start (as much of it as fits), and its check, which allocates
// nothing for a match, finds a wrong number or byte.
func TestTextPayload(t *testing.T) {
	// Not parallel: testing.AllocsPerRun.
	pl := newPayload(20, true)
	msg := make([]byte, 20)
	pl.fill(msg, 0x1234abcd)
	if got := string(msg); got != "000000001234abcdqrst" {
		t.Errorf("message %q", got)
	}
	if err := pl.check(msg, 20, 0x1234abcd); err != nil {
		t.Errorf("its own echo: %v", err)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		pl.fill(msg, 0xfedcba9876543210)
		_ = pl.check(msg, 20, 0xfedcba9876543210)
	}); allocs != 0 {
		t.Errorf("fill and check allocate %v times", allocs)
	}
	pl.fill(msg, 7)
	for _, c := range []struct {
		name string
		got  []byte
		seq  uint64
		want string
	}{
		{"wrong number", msg, 8, `sequence number "0000000000000007", want "0000000000000008"`},
		{"wrong byte", append(bytes.Clone(msg[:17]), "!st"...), 7, "byte 17 is 0x21, want 0x72"},
		{"wrong digit", append([]byte("000000000000000G"), msg[16:]...), 7, `sequence number "000000000000000G"`},
	} {
		if err := pl.check(c.got, 20, c.seq); !errors.Is(err, errMismatch) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a mismatch that says %s", c.name, err, c.want)
		}
	}

	// Shorter than a whole number: the low-order digits, which tell
	// apart 16^size messages in a row.
	short := newPayload(3, true)
	msg = msg[:3]
	short.fill(msg, 0x1abc)
	if string(msg) != "abc" || short.check(msg, 3, 0x1abc) != nil || short.check(msg, 3, 0xabd) == nil {
		t.Errorf("3 bytes: %q", msg)
	}

	// A binary echo of a text message, and the other way round.
	if err := opErr(ws.OpBinary, dataOp(true)); !errors.Is(err, errMismatch) || !strings.Contains(err.Error(), "a binary message for a text one") {
		t.Errorf("binary for text: %v", err)
	}
	if opErr(ws.OpText, dataOp(true)) != nil || opErr(ws.OpBinary, dataOp(false)) != nil || opErr(ws.OpText, dataOp(false)) == nil {
		t.Error("opErr: wrong verdict")
	}
}

// TestBinaryPayload: the binary message's sequence number, little-endian,
// and its check, which allocates nothing for a match.
func TestBinaryPayload(t *testing.T) {
	// Not parallel: testing.AllocsPerRun.
	pl := newPayload(10, false)
	msg := make([]byte, 10)
	pl.fill(msg, 0x0102030405060708)
	if want := "\x08\x07\x06\x05\x04\x03\x02\x01ij"; string(msg) != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		pl.fill(msg, 42)
		_ = pl.check(msg, 10, 42)
	}); allocs != 0 {
		t.Errorf("fill and check allocate %v times", allocs)
	}
	if err := pl.check(msg, 10, 43); !errors.Is(err, errMismatch) || !strings.Contains(err.Error(), "sequence number 2a00000000000000, want 2b00000000000000") {
		t.Errorf("wrong number: %v", err)
	}
}

package wsserver_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wstest"
)

// TestFrames drives every target frame by frame: a fragmented message with
// a ping in between comes back whole in one frame after the pong, and bad
// input gets the close code RFC 6455 gives it: 1009 over -max-message,
// 1007 for invalid UTF-8, 1002 for protocol errors.
func TestFrames(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) { c.MaxMessage = 1000 })
		before := tg.Stats()

		rc := rawDial(t, tg.Addr)
		rc.send(ws.OpText, false, []byte("Hel"))
		rc.send(ws.OpPing, true, []byte("between"))
		rc.send(ws.OpContinuation, false, []byte("lo, "))
		rc.send(ws.OpContinuation, true, []byte("wörld"))
		if h, p := rc.read(); h.OpCode != ws.OpPong || string(p) != "between" {
			t.Fatalf("got %v %q, want the pong first", h.OpCode, p)
		}
		if h, p := rc.read(); h.OpCode != ws.OpText || !h.Fin || string(p) != "Hello, wörld" {
			t.Fatalf("got %v fin=%v %q, want the text whole in one frame", h.OpCode, h.Fin, p)
		}
		for _, m := range []struct {
			op ws.OpCode
			p  []byte
		}{
			{ws.OpBinary, []byte{0xff, 0, 0xfe}},
			{ws.OpBinary, nil},
			{ws.OpBinary, wstest.Payload(1000)}, // exactly -max-message
		} {
			rc.send(m.op, true, m.p)
			if h, p := rc.read(); h.OpCode != m.op || !bytes.Equal(p, m.p) {
				t.Fatalf("sent %v with %d bytes, got %v with %d", m.op, len(m.p), h.OpCode, len(p))
			}
		}
		rc.send(ws.OpClose, true, closePayload(4001, "done"))
		rc.expectClose(4001)

		bad := []struct {
			name string
			send func(rc *rawConn)
			code int
		}{
			{"oversize", func(rc *rawConn) { rc.send(ws.OpBinary, true, wstest.Payload(1001)) }, 1009},
			{"oversize in fragments", func(rc *rawConn) {
				rc.send(ws.OpText, false, wstest.Payload(600))
				rc.send(ws.OpContinuation, true, wstest.Payload(600))
			}, 1009},
			{"invalid UTF-8", func(rc *rawConn) { rc.send(ws.OpText, true, []byte{'a', 0xff, 0xfe}) }, 1007},
			{"invalid UTF-8 across fragments", func(rc *rawConn) {
				rc.send(ws.OpText, false, []byte{0xce}) // the first byte of κ
				rc.send(ws.OpContinuation, true, []byte{0xba, 0xc0})
			}, 1007},
			{"reserved opcode", func(rc *rawConn) { rc.send(ws.OpCode(3), true, []byte("x")) }, 1002},
			{"unmasked frame", func(rc *rawConn) { rc.sendFrame(ws.NewTextFrame([]byte("x"))) }, 1002},
			{"continuation first", func(rc *rawConn) { rc.send(ws.OpContinuation, true, []byte("x")) }, 1002},
			{"fragmented ping", func(rc *rawConn) { rc.send(ws.OpPing, false, []byte("x")) }, 1002},
			{"reserved close code", func(rc *rawConn) { rc.send(ws.OpClose, true, closePayload(1005, "")) }, 1002},
			{"RSV1 without compression", func(rc *rawConn) {
				f := ws.NewTextFrame([]byte("x"))
				f.Header.Rsv = ws.Rsv(true, false, false)
				rc.sendFrame(ws.MaskFrame(f))
			}, 1002},
		}
		want := map[string]uint64{"4001": 1}
		for _, c := range bad {
			t.Run(c.name, func(t *testing.T) {
				rc := rawDial(t, tg.Addr)
				c.send(rc)
				rc.expectClose(c.code)
			})
			want[strconv.Itoa(c.code)]++
		}
		d := protocol.Diff(before, tg.Settled(t))
		for reason, n := range want {
			check(t, "disconnects "+reason, d.Disconnects[reason], n)
		}
		if len(d.Disconnects) != len(want) {
			t.Errorf("disconnects %v, want %v", d.Disconnects, want)
		}
		// The good messages only: 1 fragmented + 3.
		check(t, "messages_received", d.MessagesReceived, 4)
		check(t, "messages_sent", d.MessagesSent, 4)
	})
}

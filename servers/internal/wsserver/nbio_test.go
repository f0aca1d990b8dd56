package wsserver

import (
	"testing"

	"github.com/gobwas/ws"
	"github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/knowngood/knowngood/shared/wstest"
)

// TestEmptyScan: the messages with no payload are found wherever the reads
// cut the frames, whole or fragmented, with pings between, and nothing else
// is taken for one.
func TestEmptyScan(t *testing.T) {
	frame := func(op ws.OpCode, fin bool, p []byte) []byte {
		b, err := ws.CompileFrame(ws.MaskFrame(ws.NewFrame(op, fin, p)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var stream []byte
	for _, f := range [][]byte{
		frame(ws.OpText, true, []byte("x")),
		frame(ws.OpBinary, true, nil), // empty 1
		frame(ws.OpText, false, nil),
		frame(ws.OpPing, true, nil),
		frame(ws.OpContinuation, true, nil), // empty 2, fragmented
		frame(ws.OpText, false, nil),
		frame(ws.OpContinuation, true, []byte("y")), // not empty
		frame(ws.OpBinary, true, wstest.Payload(300)),
		frame(ws.OpText, true, nil), // empty 3
	} {
		stream = append(stream, f...)
	}
	want := []websocket.MessageType{websocket.BinaryMessage, websocket.TextMessage, websocket.TextMessage}
	for _, step := range []int{1, 2, 5, 13, len(stream)} {
		var e emptyScan
		var got []websocket.MessageType
		for i := 0; i < len(stream); i += step {
			b := stream[i:min(i+step, len(stream))]
			for len(b) > 0 {
				cut, op, empty := e.scan(b)
				if empty {
					got = append(got, op)
				}
				b = b[cut:]
			}
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("reads of %d bytes: found %v, want %v", step, got, want)
		}
	}
}

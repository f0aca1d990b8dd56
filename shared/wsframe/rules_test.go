package wsframe

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/shared/wstest"
)

func closeBody(code int, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

// TestHeaderCode: the lengths that would overflow a sum are refused with
// 1009 at the header, on a first frame and on a continuation.
func TestHeaderCode(t *testing.T) {
	const max = 1000
	open := InMessage{Op: ws.OpText, Held: 10}
	for _, c := range []struct {
		name string
		h    ws.Header
		m    InMessage
		want int
	}{
		{"2^63-1 first", ws.Header{Fin: true, OpCode: ws.OpBinary, Masked: true, Length: math.MaxInt64}, InMessage{}, 1009},
		{"2^63-1 continuation", ws.Header{Fin: true, OpCode: ws.OpContinuation, Masked: true, Length: math.MaxInt64}, open, 1009},
		{"2^63-10 continuation", ws.Header{Fin: true, OpCode: ws.OpContinuation, Masked: true, Length: math.MaxInt64 - 9}, open, 1009},
		{"exactly the rest", ws.Header{Fin: true, OpCode: ws.OpContinuation, Masked: true, Length: max - 10}, open, 0},
		{"one over the rest", ws.Header{Fin: true, OpCode: ws.OpContinuation, Masked: true, Length: max - 9}, open, 1009},
		{"compressed 2^63-1 continuation", ws.Header{Fin: true, OpCode: ws.OpContinuation, Masked: true, Length: math.MaxInt64}, InMessage{Op: ws.OpText, Compressed: true, Held: 10}, 1009},
		{"unmasked", ws.Header{Fin: true, OpCode: ws.OpText}, InMessage{}, 1002},
		{"close over 125", ws.Header{Fin: true, OpCode: ws.OpClose, Masked: true, Length: 126}, InMessage{}, 1002},
	} {
		if got := HeaderCode(c.h, c.m, true, max); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if got := WireLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("WireLimit(MaxInt64) = %d, want it saturated", got)
	}
}

func TestParseHeader(t *testing.T) {
	full := wstest.Header(0x82, 1<<40)
	for n := range len(full) {
		if _, hlen, err := ParseHeader(full[:n]); hlen != 0 || err != nil {
			t.Fatalf("%d of %d bytes: %d, %v; want incomplete", n, len(full), hlen, err)
		}
	}
	h, hlen, err := ParseHeader(full)
	if err != nil || hlen != 14 || h.Length != 1<<40 || h.Mask != wstest.Mask || h.OpCode != ws.OpBinary || !h.Fin {
		t.Fatalf("%+v %d %v", h, hlen, err)
	}
	if _, _, err := ParseHeader(wstest.Header(0x82, 1<<63)); !errors.Is(err, ErrLengthMSB) {
		t.Fatalf("top bit set: %v", err)
	}
}

func TestCloseFrameCode(t *testing.T) {
	for _, c := range []struct {
		payload    []byte
		code, fail int
	}{
		{nil, 1005, 0},
		{[]byte{3}, 0, 1002},
		{closeBody(1000, "ok"), 1000, 0},
		{closeBody(1014, ""), 1014, 0},
		{closeBody(1000, "\xff"), 1000, 1007},
		{closeBody(1005, ""), 1005, 1002},
		{closeBody(1016, ""), 1016, 1002},
		{closeBody(2999, ""), 2999, 1002},
		{closeBody(5000, ""), 5000, 1002},
	} {
		if code, fail := CloseFrameCode(c.payload); code != c.code || fail != c.fail {
			t.Errorf("% x: %d %d, want %d %d", c.payload, code, fail, c.code, c.fail)
		}
	}
}

// Package wsframe is the WebSocket frame codec of the gnet target, apart
// from any event loop: bytes in, frames and close codes out. It parses
// client frame headers with overflow-safe lengths, unmasks, applies the
// rules of RFC 6455 and RFC 7692 to control frames, fragments, close codes
// and text, inflates permessage-deflate messages within a size bound, and
// writes server frames. The rules here are also the ones the server
// enforces in front of gorilla and coder, so the three libraries answer a
// bad frame alike. loadgen's clients on event loops split the targets'
// frames with the same parser (Next) and mask their own (ClientFrame).
package wsframe

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/gobwas/ws"
)

// MaxHeader is the size of the longest frame header: 2 bytes, an 8-byte
// length and a 4-byte mask.
const MaxHeader = 14

// ErrLengthMSB: a 64-bit payload length with the most significant bit set,
// which RFC 6455 5.2 forbids. The framing is lost with it: no length to skip.
var ErrLengthMSB = errors.New("frame length with the most significant bit set")

// ParseHeader reads the frame header at the start of b. n is its size, or
// 0 when b holds only part of it.
func ParseHeader(b []byte) (h ws.Header, n int, err error) {
	if len(b) < 2 {
		return h, 0, nil
	}
	h.Fin = b[0]&0x80 != 0
	h.Rsv = (b[0] & 0x70) >> 4
	h.OpCode = ws.OpCode(b[0] & 0x0f)
	h.Masked = b[1]&0x80 != 0
	size := b[1] & 0x7f
	n = 2
	switch size {
	case 126:
		n += 2
	case 127:
		n += 8
	default:
		h.Length = int64(size)
	}
	if h.Masked {
		n += 4
	}
	if len(b) < n {
		return h, 0, nil
	}
	switch size {
	case 126:
		h.Length = int64(binary.BigEndian.Uint16(b[2:]))
	case 127:
		u := binary.BigEndian.Uint64(b[2:])
		if u > math.MaxInt64 {
			return h, n, ErrLengthMSB
		}
		h.Length = int64(u)
	}
	if h.Masked {
		copy(h.Mask[:], b[n-4:n])
	}
	return h, n, nil
}

// AppendClose appends a server close frame with code and no reason.
func AppendClose(b []byte, code int) []byte {
	b = AppendHeader(b, 0, ws.OpClose, 2)
	return binary.BigEndian.AppendUint16(b, uint16(code))
}

// AppendFrame appends an unmasked, final server frame.
func AppendFrame(b []byte, rsv byte, op ws.OpCode, payload []byte) []byte {
	return append(AppendHeader(b, rsv, op, len(payload)), payload...)
}

// AppendHeader appends an unmasked, final frame header (RFC 6455 5.2) for n
// payload bytes; rsv is in gobwas/ws's ws.Header.Rsv form.
func AppendHeader(b []byte, rsv byte, op ws.OpCode, n int) []byte {
	b0 := 0x80 | rsv<<4 | byte(op)
	switch {
	case n <= 125:
		return append(b, b0, byte(n))
	case n <= 0xffff:
		return append(b, b0, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, b0, 127), uint64(n))
	}
}

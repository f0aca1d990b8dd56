package wsframe

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/gobwas/ws"
)

// InMessage is the fragmented data message a connection is receiving, as far
// as the frame rules need it.
type InMessage struct {
	Op         ws.OpCode // of its first frame; 0 when no message is open
	Compressed bool
	Held       int64 // payload bytes so far, as sent
}

// HeaderCode returns the close code that a client's frame header calls
// for, 0 if none: 1002 for what RFC 6455 5.2-5.5 and RFC 7692 forbid, 1009
// for a message over the limit max. The length is compared with what is
// left of the limit, never added to what is held: a 63-bit length would
// overflow the sum.
func HeaderCode(h ws.Header, m InMessage, deflate bool, max int64) int {
	if !h.Masked || h.Rsv2() || h.Rsv3() {
		return int(ws.StatusProtocolError)
	}
	switch h.OpCode {
	case ws.OpClose, ws.OpPing, ws.OpPong:
		if !h.Fin || h.Length > ws.MaxControlFramePayloadSize || h.Rsv1() {
			return int(ws.StatusProtocolError)
		}
	case ws.OpText, ws.OpBinary:
		if m.Op != 0 || h.Rsv1() && !deflate {
			return int(ws.StatusProtocolError)
		}
		if h.Length > MessageLimit(h.Rsv1(), max) {
			return int(ws.StatusMessageTooBig)
		}
	case ws.OpContinuation:
		if m.Op == 0 || h.Rsv1() {
			return int(ws.StatusProtocolError)
		}
		if h.Length > MessageLimit(m.Compressed, max)-m.Held {
			return int(ws.StatusMessageTooBig)
		}
	default:
		return int(ws.StatusProtocolError) // reserved opcodes
	}
	return 0
}

// Next is m after a data frame with header h, which HeaderCode passed.
func (m InMessage) Next(h ws.Header) InMessage {
	switch {
	case h.OpCode != ws.OpText && h.OpCode != ws.OpBinary && h.OpCode != ws.OpContinuation:
		return m
	case h.Fin:
		return InMessage{}
	case h.OpCode == ws.OpContinuation:
		m.Held += h.Length // <= the limit: HeaderCode checked it
		return m
	default:
		return InMessage{Op: h.OpCode, Compressed: h.Rsv1(), Held: h.Length}
	}
}

// MessageLimit is the largest message on the wire: compressed messages are
// checked again once inflated.
func MessageLimit(compressed bool, max int64) int64 {
	if compressed {
		return WireLimit(max)
	}
	return max
}

// WireLimit is the largest compressed message accepted on the wire when
// the decompressed limit is max: incompressible data grows a little when
// deflated (a few bytes per block; max/64 is ample), and the decompressed
// size is checked on its own. It saturates rather than overflow when max
// is near the largest int64.
func WireLimit(max int64) int64 {
	extra := max/64 + 1024
	if max > math.MaxInt64-extra {
		return math.MaxInt64
	}
	return max + extra
}

// CloseFrameCode checks a client's close frame payload (unmasked). It
// returns the code the client sent (1005 when none) and the code the
// server fails the connection with instead, 0 if the frame is valid: 1002
// for a 1-byte payload or a code a client may not send (RFC 6455 5.5.1,
// 7.4), 1007 for a reason that is not UTF-8 (RFC 6455 5.5.1, 8.1). Node's
// ws answers the same.
func CloseFrameCode(payload []byte) (code, fail int) {
	switch {
	case len(payload) == 0:
		return int(ws.StatusNoStatusRcvd), 0
	case len(payload) == 1:
		return 0, int(ws.StatusProtocolError)
	}
	code = int(binary.BigEndian.Uint16(payload))
	switch {
	case !ValidCloseCode(code):
		return code, int(ws.StatusProtocolError)
	case !utf8.Valid(payload[2:]):
		return code, int(ws.StatusInvalidFramePayloadData)
	}
	return code, 0
}

// ValidCloseCode reports whether a client may send code in a close frame
// (RFC 6455 7.4, with the codes IANA has registered since: 1012-1014).
func ValidCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

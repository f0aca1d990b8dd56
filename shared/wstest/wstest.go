// Package wstest builds the exact bytes a WebSocket client sends, for tests
// that speak to a target byte by byte: masked frames with any header, the
// ones RFC 6455 forbids included.
package wstest

import "encoding/binary"

// Mask is the masking key of every frame built here.
var Mask = [4]byte{0x37, 0xfa, 0x21, 0x3d}

// Frame is one masked frame: first byte b0 (FIN, RSV, opcode), then the
// payload masked with Mask.
func Frame(b0 byte, payload []byte) []byte {
	b := Header(b0, uint64(len(payload)))
	for i, c := range payload {
		b = append(b, c^Mask[i%4])
	}
	return b
}

// Header is a masked frame header announcing n payload bytes, in the
// shortest length encoding; n past 2^63-1 sets the top bit that RFC 6455
// 5.2 forbids.
func Header(b0 byte, n uint64) []byte {
	b := []byte{b0}
	switch {
	case n <= 125:
		b = append(b, 0x80|byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0x80|126), uint16(n))
	default:
		b = binary.BigEndian.AppendUint64(append(b, 0x80|127), n)
	}
	return append(b, Mask[:]...)
}

// Payload is n bytes of lowercase letters in turn: valid UTF-8 for a text
// message, and easy to tell apart from a shifted copy.
func Payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

package wsframe

import (
	"fmt"

	"github.com/gobwas/ws"
)

// Next splits the first whole frame off b, for a reader on an event loop
// that is handed whatever bytes have come (loadgen's clients read the
// targets' frames so): its header, its payload unmasked in place, and n,
// the bytes both took; n is 0 while b holds only part of the frame. A
// frame longer than max is an error: its bytes are never waited for.
func Next(b []byte, max int64) (h ws.Header, payload []byte, n int, err error) {
	h, hlen, err := ParseHeader(b)
	if err != nil || hlen == 0 {
		return h, nil, 0, err
	}
	if h.Length > max {
		return h, nil, 0, fmt.Errorf("a frame of %d bytes, over %d", h.Length, max)
	}
	if h.Length > int64(len(b)-hlen) { // both sides small: no overflow
		return h, nil, 0, nil
	}
	n = hlen + int(h.Length)
	payload = b[hlen:n]
	if h.Masked {
		ws.Cipher(payload, h.Mask, 0)
	}
	return h, payload, n, nil
}

// ClientFrame is one final frame masked as a client must send it (RFC
// 6455 5.3); payload is left as it is, a copy is masked.
func ClientFrame(op ws.OpCode, payload []byte) []byte {
	b, _ := ws.CompileFrame(ws.MaskFrame(ws.NewFrame(op, true, payload)))
	return b
}

package broadcast

import (
	"github.com/knowngood/knowngood/shared/protocol"
)

// parseBroadcast reads a broadcast of loadgen's own, in exactly the layout
// encoding/json gives a sent inside protocol.AppendBroadcast:
// {"type":"broadcast","payload":{"s":S,"n":N,"t":T[,"pad":"x..."]}}.
// ok is false for anything else, which the reader then decodes as JSON: at
// 100,000 deliveries a second encoding/json would be a quarter of the
// client's CPU.
func parseBroadcast(b []byte) (p sent, ok bool) {
	b, ok = protocol.CutLiteral(b, `{"type":"broadcast","payload":{"s":`)
	var s, n, t uint64
	if ok {
		s, b, ok = protocol.CutUint(b)
	}
	if ok {
		b, ok = protocol.CutLiteral(b, `,"n":`)
	}
	if ok {
		n, b, ok = protocol.CutUint(b)
	}
	if ok {
		b, ok = protocol.CutLiteral(b, `,"t":`)
	}
	if ok {
		t, b, ok = protocol.CutUint(b)
	}
	if !ok || s > 1<<31-1 || t > 1<<63-1 {
		return sent{}, false
	}
	if rest, padded := protocol.CutLiteral(b, `,"pad":"`); padded {
		// loadgen pads with x only.
		i := 0
		for i < len(rest) && rest[i] == 'x' {
			i++
		}
		b = rest[i:]
		if b, ok = protocol.CutLiteral(b, `"`); !ok {
			return sent{}, false
		}
	}
	if string(b) != "}}" {
		return sent{}, false
	}
	return sent{S: int(s), N: n, T: int64(t)}, true
}

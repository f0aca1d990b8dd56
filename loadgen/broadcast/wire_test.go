package broadcast

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/shared/protocol"
)

// TestParseBroadcast: parseBroadcast reads what the senders write, as
// encoding/json does, and says not ok for any other layout.
func TestParseBroadcast(t *testing.T) {
	t.Parallel()
	for _, want := range []sent{{S: 0, N: 1, T: 1764489600000000000}, {S: 9, N: 123456, T: 5, Pad: strings.Repeat("x", 300)}} {
		payload, _ := json.Marshal(want)
		b := protocol.AppendBroadcast(nil, payload)
		got, ok := parseBroadcast(b)
		want.Pad = "" // not kept
		if !ok || got != want {
			t.Errorf("%s: %+v %v; want %+v", b, got, ok, want)
		}
	}
	for _, b := range []string{
		`{"type":"broadcast","payload":{"n":1,"s":0,"t":2}}`,
		`{"type":"broadcast","payload":{"s":0,"n":1,"t":2,"pad":"xy"}}`,
		`{"type":"broadcast","payload":{"s":0,"n":1,"t":2}`,
		`{"type":"broadcast","payload":{"s":-1,"n":1,"t":2}}`,
		`{"type":"broadcast","payload":{"s":0,"n":1,"t":9223372036854775808}}`,
		`{"type":"broadcastResult","payload":{"s":0,"n":1,"t":2},"listenerCount":3}`,
		`{"type":"broadcast","payload":"hello"}`,
	} {
		if got, ok := parseBroadcast([]byte(b)); ok {
			t.Errorf("%s: ok (%+v); want not ok", b, got)
		}
	}
}

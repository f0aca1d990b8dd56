package hops

import (
	"encoding/json"
	"testing"
	"time"
)

func TestJSON(t *testing.T) {
	now := time.UnixMicro(2_000_000)
	for _, c := range []struct {
		arg, stamp, want string
		hop              string // the hop observed, "" for none
		d                time.Duration
	}{
		{`"plain"`, Received, `"plain"`, "", 0},
		{`{"x":"hops"}`, Received, `{"x":"hops"}`, "", 0},
		{`{"hops":5}`, Received, `{"hops":5}`, "", 0},
		{`{"hops":null}`, Received, `{"hops":null}`, "", 0},
		{`{"hops":{}`, Received, `{"hops":{}`, "", 0}, // cut: left as it came
		{`{"hops":{},"t":1500000}`, Received, `{"hops":{"rx":2000000},"t":1500000}`, ClientToReplica, 500 * time.Millisecond},
		{`{"hops":{}}`, Received, `{"hops":{"rx":2000000}}`, "", 0},                         // no send time: not timed
		{`{"hops":{},"t":9000000}`, Received, `{"hops":{"rx":2000000},"t":9000000}`, "", 0}, // from the future
		{`{"hops":{},"t":"soon"}`, Received, `{"hops":{"rx":2000000},"t":"soon"}`, "", 0},   // not a number
		{`{"hops":{},"t":1e400}`, Received, `{"hops":{"rx":2000000},"t":1e400}`, "", 0},     // out of range
		{`{"hops":{"rx":1999000}}`, Sent, `{"hops":{"rx":1999000,"tx":2000000}}`, Replica, time.Millisecond},
		{`{"hops":{"rx":1,"tx":1000000}}`, Delivered, `{"hops":{"dlv":2000000,"rx":1,"tx":1000000}}`, Redis, time.Second},
	} {
		var hop string
		var d time.Duration
		got := JSON(json.RawMessage(c.arg), c.stamp, now, func(h string, dd time.Duration) { hop, d = h, dd })
		if string(got) != c.want || hop != c.hop || d != c.d {
			t.Errorf("JSON(%s, %s) = %s, observed %q %v; want %s, %q %v", c.arg, c.stamp, got, hop, d, c.want, c.hop, c.d)
		}
	}
}

func TestValue(t *testing.T) {
	now := time.UnixMicro(2_000_000)
	var hop string
	var d time.Duration
	observe := func(h string, dd time.Duration) { hop, d = h, dd }
	v := map[string]any{"hops": map[string]any{"tx": uint64(1_000_000)}}
	Value(v, Delivered, now, observe)
	if got := v["hops"].(map[string]any)["dlv"]; got != int64(2_000_000) || hop != Redis || d != time.Second {
		t.Errorf("dlv %v, observed %q %v", got, hop, d)
	}
	hop = ""
	for _, v := range []any{"plain", 5.0, map[string]any{"hops": 5}, map[string]any{"hops": map[string]any{"rx": -3.0}}} {
		Value(v, Sent, now, observe)
	}
	if hop != "" {
		t.Errorf("observed %q for arguments with no valid stamp before", hop)
	}
	// A nil observer is allowed.
	Value(map[string]any{"hops": map[string]any{}, "t": 1.0}, Received, now, nil)
}

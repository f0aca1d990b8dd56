package siolite

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestEventPacket: the hand-written encoding decodes to what
// encoding/json's does, for the kinds written by hand and the others.
func TestEventPacket(t *testing.T) {
	args := []any{
		"room-3:12:5", `quote " and \ backslash`, "tab\tnewline\n\x00\x1f", "é ü 日本 <&>", "bad \xff utf-8",
		7, int64(-1) << 62, 1.5, true, nil,
		map[string]any{"t": int64(1733490000123456), "hops": map[string]any{}, "from": 12},
		map[string]any{"nested": []any{"a", 1, map[string]any{"z": "y"}}},
		json.RawMessage(`{"raw":[1,2]}`),
	}
	for _, id := range []int64{-1, 0, 42} {
		for _, a := range args {
			got, err := eventPacket("", id, "echo", []any{a})
			if err != nil {
				t.Fatalf("eventPacket(%v): %v", a, err)
			}
			want, _ := json.Marshal([]any{"echo", a})
			prefix := "42"
			if id >= 0 {
				prefix += strconv.FormatInt(id, 10)
			}
			if !strings.HasPrefix(string(got), prefix) {
				t.Fatalf("eventPacket(%d, %q) = %q, want it after %q", id, a, got, prefix)
			}
			var g, w any
			body := got[len(prefix):]
			if err := json.Unmarshal(body, &g); err != nil {
				t.Fatalf("eventPacket(%d, %q) = %q: not JSON after %q: %v", id, a, got, prefix, err)
			}
			_ = json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("eventPacket(%q) decodes to %v, encoding/json's to %v", a, g, w)
			}
		}
	}
	if _, err := eventPacket("", -1, "echo", []any{json.RawMessage(`{bad`)}); err == nil {
		t.Error("an invalid json.RawMessage was sent")
	}
	if _, err := eventPacket("", -1, "echo", []any{func() {}}); err == nil {
		t.Error("a func was sent")
	}
}

package socketio

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLeanHeader: the default engine, which keeps its open request for
// the session's life, gets only the headers it reads; the request that
// net/http holds keeps them all.
func TestLeanHeader(t *testing.T) {
	r := httptest.NewRequest("GET", "/socket.io/?EIO=4&transport=websocket", nil)
	r.Header.Set("Origin", "http://a")
	r.Header.Set("Sec-WebSocket-Key", "k")
	r.Header.Set("X-Pad", strings.Repeat("a", 8<<10))
	lean := leanHeader(r)
	if got := lean.Header.Get("X-Pad"); got != "" {
		t.Errorf("the engine's request kept X-Pad (%d bytes)", len(got))
	}
	if lean.Header.Get("Origin") != "http://a" || lean.Header.Get("Sec-WebSocket-Key") != "k" {
		t.Errorf("the engine's request lost a header it reads: %v", lean.Header)
	}
	if r.Header.Get("X-Pad") == "" {
		t.Error("the original request lost X-Pad")
	}
}

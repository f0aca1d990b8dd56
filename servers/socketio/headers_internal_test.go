package socketio

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLeanHeader: the default engine, which keeps its open request for
// the session's life, gets only the headers it reads.
func TestLeanHeader(t *testing.T) {
	r := httptest.NewRequest("GET", "/socket.io/?EIO=4&transport=websocket", nil)
	r.Header.Set("Origin", "http://a")
	r.Header.Set("Sec-WebSocket-Key", "k")
	r.Header.Set("X-Pad", strings.Repeat("a", 8<<10))
	leanHeader(r)
	if got := r.Header.Get("X-Pad"); got != "" {
		t.Errorf("the engine's request kept X-Pad (%d bytes)", len(got))
	}
	if r.Header.Get("Origin") != "http://a" || r.Header.Get("Sec-WebSocket-Key") != "k" {
		t.Errorf("the engine's request lost a header it reads: %v", r.Header)
	}
}

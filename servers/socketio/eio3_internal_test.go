package socketio

import (
	"net/http"
	"strings"
	"testing"
)

// TestHasClosePacket reads POSTed payloads of both Engine.IO versions as
// the engine will: v3's length prefixes are not packet types.
func TestHasClosePacket(t *testing.T) {
	for _, c := range []struct {
		protocol             int
		contentType, payload string
		want                 bool
	}{
		{4, "", "1", true},
		{4, "", "4hello\x1e1", true},
		{4, "", "42[\"echo\"]", false},
		{3, "", "1:1", true},
		{3, "", "6:4hello1:1", true},
		{3, "", "12:42[\"echo\"]", false}, // a first byte of 1 is a length here
		{3, "", "1:2", false},
		{3, "", "not a payload", false},
		// v3's binary payload: 0 (a string packet), its length in digits
		// of one byte each, 0xff, the packet.
		{3, "application/octet-stream", "\x00\x01\xff1", true},
		{3, "application/octet-stream", "\x00\x01\x00\xff42[\"echo\"]", false},
	} {
		r, err := http.NewRequest(http.MethodPost, "/socket.io/?transport=polling&sid=x", strings.NewReader(c.payload))
		if err != nil {
			t.Fatal(err)
		}
		if c.contentType != "" {
			r.Header.Set("Content-Type", c.contentType)
		}
		if got := hasClosePacket(r, 1000, c.protocol); got != c.want {
			t.Errorf("Engine.IO v%d %q: hasClosePacket %v, want %v", c.protocol, c.payload, got, c.want)
		}
	}
}

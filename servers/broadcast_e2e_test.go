package servers

// The broadcast variants as a user runs them: the built binary with the
// timed push on, checked by Node's ws (scripts/clients/ws-broadcast.mjs),
// and /stats compared with what the client did.

import (
	"strings"
	"testing"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/protocol"
)

var broadcastVariants = variants.NamesOf(variants.ByFamily(variants.Broadcast))

// wsBroadcastResult is the one JSON line of scripts/clients/ws-broadcast.mjs.
type wsBroadcastResult struct {
	Client       string            `json:"client"`
	Version      string            `json:"version"`
	Clients      uint64            `json:"clients"`
	Broadcasts   uint64            `json:"broadcasts"`
	Cases        map[string]string `json:"cases"`
	MessagesSent uint64            `json:"messages_sent"`
}

// TestBroadcastNodeClient: 50 ws clients on every broadcast variant: every
// broadcast reaches every client once and in order, listenerCount is
// exact, the push arrives in seq order, bad messages are answered, and the
// server counted what the clients did.
func TestBroadcastNodeClient(t *testing.T) {
	t.Parallel()
	need(t, "ws (scripts/node_modules)", haveNodeWSEcho())
	for _, variant := range broadcastVariants {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "-variant", variant, "-push-interval", "50ms")
			before := s.stats(t)
			var r wsBroadcastResult
			runScript(t, &r, "node", "../scripts/clients/ws-broadcast.mjs", "--url", "ws"+strings.TrimPrefix(s.url, "http")+"/", "--clients", "50", "--broadcasts", "20", "--push")
			for _, c := range []string{"joined", "broadcasts", "listener_count", "push", "errors"} {
				if r.Cases[c] != "ok" {
					t.Errorf("%s: %s", c, r.Cases[c])
				}
			}
			echoSettle(t, s, func(st protocol.Stats) bool { return st.ConnectionsActive == 0 })
			d := protocol.Diff(before, s.stats(t))
			if d.ConnectionsTotal != r.Clients || d.MessagesReceived != r.MessagesSent || d.Disconnects["1000"] != r.Clients {
				t.Errorf("server: %d connections, %d messages received, disconnects %v; client: %d connections, %d sent, all closed with 1000",
					d.ConnectionsTotal, d.MessagesReceived, d.Disconnects, r.Clients, r.MessagesSent)
			}
			if d.InvalidMessages["malformed_json"] != 1 || d.InvalidMessages["unknown_type"] != 1 {
				t.Errorf("invalid messages %v, want one of each", d.InvalidMessages)
			}
		})
	}
}

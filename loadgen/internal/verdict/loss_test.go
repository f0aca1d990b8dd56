package verdict_test

import (
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestLoss: the verdicts that find a loss on either side say so (Loss),
// the others do not.
func TestLoss(t *testing.T) {
	for _, c := range []struct {
		name string
		run  verdict.Run
		loss bool
	}{
		{"agree", verdict.Run{Attempts: 10, Connected: 10, Sent: -1, Received: -1, Server: stats(10, 0, 0, 0)}, false},
		{"client lost", verdict.Run{Attempts: 10, Connected: 4, Sent: -1, Received: -1, Server: stats(10, 0, 0, 0)}, true},
		{"never reached", verdict.Run{Attempts: 10, Connected: 7, Sent: -1, Received: -1, Server: stats(7, 0, 0, 0)}, true},
		{"capped", verdict.Run{Attempts: 10, Connected: 5, Sent: -1, Received: -1, Server: stats(5, 5, 0, 0), Config: map[string]string{"max-conns": "5"}}, false},
		{"not delivered", verdict.Run{Sent: 100, Received: -1, Server: &protocol.Stats{MessagesReceived: 90}}, true},
		{"replies lost", verdict.Run{Sent: -1, Received: 90, Server: &protocol.Stats{MessagesSent: 100}}, true},
		{"broadcast dropped", verdict.Run{Sent: -1, Received: -1, Lost: 5, Server: &protocol.Stats{BroadcastDropped: 5}}, true},
		{"messages agree", verdict.Run{Sent: 100, Received: 100, Server: &protocol.Stats{MessagesReceived: 100, MessagesSent: 100}}, false},
		{"faults: drop", verdict.Run{Sent: -1, Received: -1, Server: &protocol.Stats{Faults: map[string]uint64{"drop": 3}}}, true},
		{"faults: delay", verdict.Run{Sent: -1, Received: -1, Server: &protocol.Stats{Faults: map[string]uint64{"delay": 3}}}, false},
		{"no server view", verdict.Run{Attempts: 10, Connected: 0, Sent: -1, Received: -1}, false},
	} {
		vs := verdict.Judge(c.run)
		if got := verdict.Lost(vs); got != c.loss {
			t.Errorf("%s: Lost = %v, want %v (%+v)", c.name, got, c.loss, vs)
		}
	}
}

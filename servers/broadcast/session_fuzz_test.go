package broadcast

import (
	"encoding/json"
	"testing"

	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/protocol"
)

// fakePeer collects what the session sends.
type fakePeer struct{ sent [][]byte }

func (p *fakePeer) Reply(_ wsserver.Op, data []byte) {
	p.sent = append(p.sent, append([]byte(nil), data...))
}
func (p *fakePeer) Enqueue(o *wsserver.Outgoing) error {
	for m := o; m != nil; m = m.Then() {
		p.sent = append(p.sent, m.Data)
	}
	return nil
}
func (p *fakePeer) Close(int) {}

// FuzzSessionMessage: whatever a client sends, the session answers it
// with valid JSON (an echo of the message itself, a broadcast and its
// result, or an error), never panics, and counts it as invalid exactly
// when it answers with an error.
func FuzzSessionMessage(f *testing.F) {
	for _, seed := range []string{
		`{"type":"echo","payload":"x"}`, `{"type":"broadcast","payload":{"a":[1,2]}}`, `{"type":"broadcast"}`,
		`{"type":"nope"}`, `{"type":1}`, `not json`, `{"payload":"\ud800"}`, `[]`, `null`, ``, `{"type":"echo","payload":` + "\xff" + `}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		hub := NewHub("drop", nil)
		p := &fakePeer{}
		s := (&handler{hub: hub}).Open(p)
		s.Message(wsserver.Text, msg)
		s.Closed()
		if len(p.sent) == 0 || len(p.sent) > 2 {
			t.Fatalf("%q: %d answers, want 1 or 2", msg, len(p.sent))
		}
		var first protocol.BroadcastMessage
		if err := json.Unmarshal(p.sent[0], &first); err != nil && first.Type != protocol.TypeEcho {
			// An echo is the client's own bytes, valid JSON or not as the
			// client sent them; anything else the server wrote must parse.
			if string(p.sent[0]) != string(msg) {
				t.Fatalf("%q: answer %q is not JSON: %v", msg, p.sent[0], err)
			}
		}
		for _, out := range p.sent[1:] {
			if !json.Valid(out) {
				t.Fatalf("%q: answer %q is not JSON", msg, out)
			}
		}
	})
}

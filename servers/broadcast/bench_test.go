package broadcast

import (
	"testing"

	"github.com/knowngood/knowngood/servers/internal/wsserver"
)

// countingPeer takes every message and keeps nothing, so that the
// benchmark measures the session and the hub, not a queue.
type countingPeer struct{ n int }

func (p *countingPeer) Reply(wsserver.Op, []byte) {}
func (p *countingPeer) Enqueue(*wsserver.Outgoing) error {
	p.n++
	return nil
}
func (p *countingPeer) Close(int) {}

// BenchmarkLocalBroadcast: one broadcast message, parsed and handed to
// 1,000 members, without -redis. The local path must cost the same with
// the cluster code in the package as without it.
func BenchmarkLocalBroadcast(b *testing.B) {
	hub := NewHub("drop", nil)
	for range 999 {
		hub.Join(&countingPeer{})
	}
	sender := &countingPeer{}
	s := (&handler{hub: hub}).Open(sender)
	msg := []byte(`{"type":"broadcast","payload":{"from":1,"k":2}}`)
	b.ReportAllocs()
	for b.Loop() {
		s.Message(wsserver.Text, msg)
	}
}

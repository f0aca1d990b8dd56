package handshake

import (
	"github.com/knowngood/knowngood/loadgen/internal/statsclient"
	"github.com/knowngood/knowngood/shared/protocol"
)

// serverView is what the server saw between two snapshots.
func serverView(admin string, before, after statsclient.Snapshot) *ServerView {
	d := protocol.Diff(before.Stats, after.Stats)
	v := &ServerView{
		Admin:   admin,
		Variant: after.Variant,
		Handshakes: map[string]uint64{
			protocol.ResultOK: 0, protocol.ResultRejected: 0, protocol.ResultFailed: 0, protocol.ResultAbandoned: 0,
		},
		ConnectionsActive: after.ConnectionsActive,
		ResidentBytes:     after.ResidentBytes,
		MessagesReceived:  d.MessagesReceived,
		MessagesSent:      d.MessagesSent,
		Disconnects:       d.Disconnects,
		Faults:            d.Faults,
		AcceptErrors:      d.AcceptErrors,
	}
	for k, n := range d.Handshakes {
		v.Handshakes[k] = n
	}
	if d.HandshakeLatency.Count > 0 {
		v.P50ms = msPtr(d.HandshakeLatency.P50 * 1000)
		v.P99ms = msPtr(d.HandshakeLatency.P99 * 1000)
	}
	if before.CPUSeconds != nil && after.CPUSeconds != nil {
		cpu := *after.CPUSeconds - *before.CPUSeconds
		v.CPUSeconds = &cpu
	}
	return v
}

package watch

import (
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
	"github.com/knowngood/knowngood/shared/protocol"
)

// metrics are what -threshold may name in a watched run: the command's
// status, the tool's own counts and the server's view.
var metrics = []threshold.Metric{
	{Name: "exit_code", Help: "the command's exit status"},
	{Name: "seconds", Help: "how long the command ran"},
	{Name: "success", Kind: threshold.Share, Help: "the tool's ok / attempts (its own counts, read from its output or -client-json)"},
	{Name: "ok", Help: "the tool's successful connections"},
	{Name: "failed", Help: "the tool's attempts - ok"},
	{Name: "sent", Help: "messages the tool sent"},
	{Name: "received", Help: "replies the tool counted"},
	{Name: "server_ok", Help: "handshakes the server completed"},
	{Name: "rejected", Help: "handshakes the server rejected"},
	{Name: "server_failed", Help: "handshakes the server gave up on"},
	{Name: "abandoned", Help: "handshakes the client left unfinished"},
	{Name: "p50", Kind: threshold.Duration, Help: "the server's handshake latency"},
	{Name: "p99", Kind: threshold.Duration},
	{Name: "max", Kind: threshold.Duration},
	{Name: "messages_in", Help: "messages the server received"},
	{Name: "messages_out", Help: "messages the server sent"},
	{Name: "dropped", Help: "broadcasts the server dropped"},
	{Name: "faults", Help: "faults the server injected (-fault-*)"},
	{Name: "server_cpu", Help: "the server's CPU seconds"},
}

// Outcome is the run's, for loadgen's exit status and -threshold; the
// command's own failure fails it through ExitStatus.
func (r *Report) Outcome() scenario.Outcome {
	s, h := r.Server, r.Server.Handshakes
	var faults uint64
	for _, n := range s.Faults {
		faults += n
	}
	v := threshold.Values{
		"exit_code": float64(r.ExitCode), "seconds": r.Seconds,
		"server_ok": float64(h[protocol.ResultOK]), "rejected": float64(h[protocol.ResultRejected]),
		"server_failed": float64(h[protocol.ResultFailed]), "abandoned": float64(h[protocol.ResultAbandoned]),
		"messages_in": float64(s.MessagesReceived), "messages_out": float64(s.MessagesSent),
		"dropped": float64(s.BroadcastDropped), "faults": float64(faults), "server_cpu": s.CPUSeconds,
	}
	if s.HandshakeLatency.Count > 0 {
		v["p50"], v["p99"], v["max"] = s.HandshakeLatency.P50*1000, s.HandshakeLatency.P99*1000, s.HandshakeLatency.Max*1000
	}
	out := scenario.Outcome{Verdicts: r.Verdicts, Metrics: v}
	if r.Attempts >= 0 && r.OK >= 0 {
		v["ok"], v["failed"] = float64(r.OK), float64(r.Attempts-r.OK)
		if r.Attempts > 0 {
			v["success"] = float64(r.OK) / float64(r.Attempts)
		}
		out.Attempts, out.Connected = r.Attempts, r.OK
	}
	if r.Sent >= 0 {
		v["sent"] = float64(r.Sent)
	}
	if r.Received >= 0 {
		v["received"] = float64(r.Received)
	}
	return out
}

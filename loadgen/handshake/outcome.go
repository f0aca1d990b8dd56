package handshake

import (
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// metrics are what -threshold may name in a handshake run.
var metrics = []threshold.Metric{
	{Name: "success", Kind: threshold.Share, Help: "connected / attempts"},
	{Name: "ok", Help: "connections whose namespace CONNECT came"},
	{Name: "failed", Help: "connections that did not"},
	{Name: "echoed", Help: "echo events acked (-echo)"},
	{Name: "echo_errors", Help: "echo events not acked"},
	{Name: "errors", Help: "failed + echo_errors"},
	{Name: "p50", Kind: threshold.Duration, Help: "handshake latency"},
	{Name: "p95", Kind: threshold.Duration},
	{Name: "p99", Kind: threshold.Duration},
	{Name: "max", Kind: threshold.Duration},
	{Name: "rate", Help: "handshakes a second"},
	{Name: "client_cpu", Help: "the client's CPU seconds"},
	{Name: "server_cpu", Help: "the server's CPU seconds (/stats)"},
}

// Outcome is the run's, for loadgen's exit status and -threshold.
func (r *Report) Outcome() scenario.Outcome {
	echoErrors := 0
	for _, n := range r.EchoErrors {
		echoErrors += n
	}
	v := threshold.Values{
		"ok": float64(r.Connected), "failed": float64(r.Failed), "echoed": float64(r.Echoed),
		"echo_errors": float64(echoErrors), "errors": float64(r.Failed + echoErrors),
		"rate": r.HandshakesPerSecond, "client_cpu": r.ClientCPUSeconds,
	}
	if r.Attempts > 0 {
		v["success"] = float64(r.Connected) / float64(r.Attempts)
	}
	for name, p := range map[string]*float64{"p50": r.P50ms, "p95": r.P95ms, "p99": r.P99ms, "max": r.MaxMs} {
		if p != nil {
			v[name] = *p
		}
	}
	if r.Server != nil && r.Server.CPUSeconds != nil {
		v["server_cpu"] = *r.Server.CPUSeconds
	}
	return scenario.Outcome{Attempts: r.Attempts, Connected: r.Connected, Verdicts: r.Verdicts, Metrics: v}
}

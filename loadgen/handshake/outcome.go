package handshake

import (
	"slices"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// metrics are what -threshold may name in a handshake run.
var metrics = slices.Concat(
	threshold.Connected("connected / attempts", "connections whose namespace CONNECT came", "connections that did not"),
	[]threshold.Metric{
		{Name: "echoed", Help: "echo events acked (-echo)"},
		{Name: "echo_errors", Help: "echo events not acked"},
		{Name: "errors", Help: "failed + echo_errors"},
	},
	threshold.Latencies("handshake latency", "p50", "p95", "p99", "max"),
	[]threshold.Metric{{Name: "rate", Help: "handshakes a second"}},
	threshold.CPU("/stats"),
)

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
	v.Share("success", float64(r.Connected), float64(r.Attempts))
	for name, p := range map[string]*float64{"p50": r.P50ms, "p95": r.P95ms, "p99": r.P99ms, "max": r.MaxMs} {
		v.Known(name, p)
	}
	if r.Server != nil {
		v.Known("server_cpu", r.Server.CPUSeconds)
	}
	return scenario.Outcome{Attempts: r.Attempts, Connected: r.Connected, Verdicts: r.Verdicts, Metrics: v}
}

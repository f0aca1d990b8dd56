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
	out := scenario.Connections(r.Attempts, r.Connected, r.Failed, r.ClientCPUSeconds, r.Verdicts)
	v := out.Metrics
	v["echoed"], v["echo_errors"], v["errors"] = float64(r.Echoed), float64(echoErrors), float64(r.Failed+echoErrors)
	v["rate"] = r.HandshakesPerSecond
	for name, p := range map[string]*float64{"p50": r.P50ms, "p95": r.P95ms, "p99": r.P99ms, "max": r.MaxMs} {
		v.Known(name, p)
	}
	if r.Server != nil {
		v.Known("server_cpu", r.Server.CPUSeconds)
	}
	return out
}

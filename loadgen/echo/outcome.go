package echo

import (
	"maps"
	"slices"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// metrics are what -threshold may name in an echo run.
var metrics = slices.Concat(
	threshold.Connected("connections established / -c", "connections established", "connections not established"),
	[]threshold.Metric{
		{Name: "messages", Help: "messages of the window echoed back"},
		{Name: "rate", Help: "messages echoed a second"},
		{Name: "sent", Help: "messages written, warmup included"},
		{Name: "lost", Help: "messages without an echo"},
		{Name: "mismatch", Help: "echoes that did not match"},
		{Name: "errors", Help: "every error: dial, write, read, mismatch, lost"},
		{Name: "behind", Help: "-mode rate: messages due that were never sent"},
	},
	threshold.Latencies("latency of the window's messages", "p50", "p90", "p99", "p999", "max"),
	threshold.CPU("/stats or -pid"),
)

// Outcome is the run's, for loadgen's exit status and -threshold.
func (r *Report) Outcome() scenario.Outcome {
	out := scenario.Connections(r.Conns, r.Connected, r.Conns-r.Connected, r.ClientCPUSeconds, r.Verdicts)
	v := out.Metrics
	maps.Copy(v, threshold.Values{
		"messages": float64(r.Messages), "rate": r.MessagesPerSecond, "sent": float64(r.Sent), "lost": float64(r.Errors[kindLost].Count),
		"mismatch": float64(r.Errors[kindMismatch].Count), "errors": float64(tally.Total(r.Errors)), "behind": float64(r.BehindSchedule),
	})
	for name, p := range map[string]*float64{"p50": r.P50ms, "p90": r.P90ms, "p99": r.P99ms, "p999": r.P999ms, "max": r.MaxMs} {
		v.Known(name, p)
	}
	if r.Server != nil {
		v.Known("server_cpu", r.Server.CPUSeconds)
	}
	if r.Connected > 0 && r.Messages == 0 && !r.Interrupted {
		out.Nothing = "no message of the window was echoed back"
	}
	return out
}

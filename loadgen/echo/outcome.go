package echo

import (
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
	v := threshold.Values{
		"ok": float64(r.Connected), "failed": float64(r.Conns - r.Connected), "messages": float64(r.Messages),
		"rate": r.MessagesPerSecond, "sent": float64(r.Sent), "lost": float64(r.Errors[kindLost].Count),
		"mismatch": float64(r.Errors[kindMismatch].Count), "errors": float64(tally.Total(r.Errors)), "behind": float64(r.BehindSchedule),
		"client_cpu": r.ClientCPUSeconds,
	}
	v.Share("success", float64(r.Connected), float64(r.Conns))
	for name, p := range map[string]*float64{"p50": r.P50ms, "p90": r.P90ms, "p99": r.P99ms, "p999": r.P999ms, "max": r.MaxMs} {
		v.Known(name, p)
	}
	if r.Server != nil {
		v.Known("server_cpu", r.Server.CPUSeconds)
	}
	out := scenario.Outcome{Attempts: r.Conns, Connected: r.Connected, Verdicts: r.Verdicts, Metrics: v}
	if r.Connected > 0 && r.Messages == 0 && !r.Interrupted {
		out.Nothing = "no message of the window was echoed back"
	}
	return out
}

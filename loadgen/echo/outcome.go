package echo

import (
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// metrics are what -threshold may name in an echo run.
var metrics = []threshold.Metric{
	{Name: "success", Kind: threshold.Share, Help: "connections established / -c"},
	{Name: "ok", Help: "connections established"},
	{Name: "failed", Help: "connections not established"},
	{Name: "messages", Help: "messages of the window echoed back"},
	{Name: "rate", Help: "messages echoed a second"},
	{Name: "sent", Help: "messages written, warmup included"},
	{Name: "lost", Help: "messages without an echo"},
	{Name: "mismatch", Help: "echoes that did not match"},
	{Name: "errors", Help: "every error: dial, write, read, mismatch, lost"},
	{Name: "behind", Help: "-mode rate: messages due that were never sent"},
	{Name: "p50", Kind: threshold.Duration, Help: "latency of the window's messages"},
	{Name: "p90", Kind: threshold.Duration},
	{Name: "p99", Kind: threshold.Duration},
	{Name: "p999", Kind: threshold.Duration},
	{Name: "max", Kind: threshold.Duration},
	{Name: "client_cpu", Help: "the client's CPU seconds"},
	{Name: "server_cpu", Help: "the server's CPU seconds (/stats or -pid)"},
}

// Outcome is the run's, for loadgen's exit status and -threshold.
func (r *Report) Outcome() scenario.Outcome {
	errs := 0
	for _, c := range r.Errors {
		errs += c.Count
	}
	v := threshold.Values{
		"ok": float64(r.Connected), "failed": float64(r.Conns - r.Connected), "messages": float64(r.Messages),
		"rate": r.MessagesPerSecond, "sent": float64(r.Sent), "lost": float64(r.Errors[kindLost].Count),
		"mismatch": float64(r.Errors[kindMismatch].Count), "errors": float64(errs), "behind": float64(r.BehindSchedule),
		"client_cpu": r.ClientCPUSeconds,
	}
	if r.Conns > 0 {
		v["success"] = float64(r.Connected) / float64(r.Conns)
	}
	for name, p := range map[string]*float64{"p50": r.P50ms, "p90": r.P90ms, "p99": r.P99ms, "p999": r.P999ms, "max": r.MaxMs} {
		if p != nil {
			v[name] = *p
		}
	}
	if r.Server != nil && r.Server.CPUSeconds != nil {
		v["server_cpu"] = *r.Server.CPUSeconds
	}
	out := scenario.Outcome{Attempts: r.Conns, Connected: r.Connected, Verdicts: r.Verdicts, Metrics: v}
	if r.Connected > 0 && r.Messages == 0 && !r.Interrupted {
		out.Nothing = "no message of the window was echoed back"
	}
	return out
}

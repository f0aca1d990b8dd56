package broadcast

import (
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// metrics are what -threshold may name in a broadcast run.
var metrics = []threshold.Metric{
	{Name: "success", Kind: threshold.Share, Help: "members that joined / -subscribers + -senders"},
	{Name: "ok", Help: "members that joined"},
	{Name: "failed", Help: "members that did not"},
	{Name: "delivery", Kind: threshold.Share, Help: "deliveries received / expected"},
	{Name: "received", Help: "deliveries received (distinct)"},
	{Name: "expected", Help: "deliveries expected"},
	{Name: "lost", Help: "deliveries expected and not received"},
	{Name: "dup", Help: "deliveries received twice or more"},
	{Name: "rate", Help: "deliveries a second"},
	{Name: "errors", Help: "every error the client counted"},
	{Name: "p50", Kind: threshold.Duration, Help: "delivery latency"},
	{Name: "p90", Kind: threshold.Duration},
	{Name: "p95", Kind: threshold.Duration},
	{Name: "p99", Kind: threshold.Duration},
	{Name: "max", Kind: threshold.Duration},
	{Name: "server_dropped", Help: "broadcasts the server dropped for slow members (/stats)"},
	{Name: "client_cpu", Help: "the client's CPU seconds"},
	{Name: "server_cpu", Help: "the server's CPU seconds (/stats)"},
}

// Outcome is the run's, for loadgen's exit status and -threshold.
func (r *Report) Outcome() scenario.Outcome {
	errs := 0
	for _, c := range r.Errors {
		errs += c.Count
	}
	members := r.Subscribers + r.Senders
	v := threshold.Values{
		"ok": float64(r.Connected), "failed": float64(r.Failed), "received": float64(r.Received), "expected": float64(r.Expected),
		"lost": float64(r.Lost), "dup": float64(r.Duplicates), "errors": float64(errs), "client_cpu": r.ClientCPUSeconds,
	}
	if members > 0 {
		v["success"] = float64(r.Connected) / float64(members)
	}
	if r.Expected > 0 {
		v["delivery"] = float64(r.Received) / float64(r.Expected)
	}
	if r.WindowSeconds > 0 {
		v["rate"] = float64(r.Received) / r.WindowSeconds
	}
	if l := r.Latency; l != nil {
		v["p50"], v["p90"], v["p95"], v["p99"], v["max"] = l.P50*1000, l.P90*1000, l.P95*1000, l.P99*1000, l.Max*1000
	}
	if s := r.Server; s != nil {
		v["server_dropped"] = float64(s.Dropped)
		if s.CPUSeconds != nil {
			v["server_cpu"] = *s.CPUSeconds
		}
	}
	out := scenario.Outcome{Attempts: members, Connected: r.Connected, Verdicts: r.Verdicts, Metrics: v}
	if r.Connected > 0 && r.Received == 0 && !r.Interrupted {
		out.Nothing = "no message was delivered"
	}
	return out
}

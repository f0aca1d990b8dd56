package broadcast

import (
	"maps"
	"slices"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// metrics are what -threshold may name in a broadcast run.
var metrics = slices.Concat(
	threshold.Connected("members that joined / -subscribers + -senders", "members that joined", "members that did not"),
	[]threshold.Metric{
		{Name: "delivery", Kind: threshold.Share, Help: "deliveries received / expected"},
		{Name: "received", Help: "deliveries received (distinct)"},
		{Name: "expected", Help: "deliveries expected"},
		{Name: "lost", Help: "deliveries expected and not received"},
		{Name: "dup", Help: "deliveries received twice or more"},
		{Name: "rate", Help: "deliveries a second"},
		{Name: "errors", Help: "every error the client counted"},
	},
	threshold.Latencies("delivery latency", "p50", "p90", "p95", "p99", "max"),
	[]threshold.Metric{{Name: "server_dropped", Help: "broadcasts the server dropped for slow members (/stats)"}},
	threshold.CPU("/stats"),
)

// Outcome is the run's, for loadgen's exit status and -threshold.
func (r *Report) Outcome() scenario.Outcome {
	out := scenario.Connections(r.Subscribers+r.Senders, r.Connected, r.Failed, r.ClientCPUSeconds, r.Verdicts)
	v := out.Metrics
	maps.Copy(v, threshold.Values{
		"received": float64(r.Received), "expected": float64(r.Expected), "lost": float64(r.Lost), "dup": float64(r.Duplicates),
		"errors": float64(tally.Total(r.Errors)),
	})
	v.Share("delivery", float64(r.Received), float64(r.Expected))
	if r.WindowSeconds > 0 {
		v["rate"] = float64(r.Received) / r.WindowSeconds
	}
	if l := r.Latency; l != nil {
		v["p50"], v["p90"], v["p95"], v["p99"], v["max"] = l.P50*1000, l.P90*1000, l.P95*1000, l.P99*1000, l.Max*1000
	}
	if s := r.Server; s != nil {
		v["server_dropped"] = float64(s.Dropped)
		v.Known("server_cpu", s.CPUSeconds)
	}
	if r.Connected > 0 && r.Received == 0 && !r.Interrupted {
		out.Nothing = "no message was delivered"
	}
	return out
}

package conns

import (
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// metrics are what -threshold may name in a conns run.
var metrics = []threshold.Metric{
	{Name: "success", Kind: threshold.Share, Help: "connections established / -n"},
	{Name: "ok", Help: "connections established"},
	{Name: "failed", Help: "connections not established"},
	{Name: "dropped", Help: "established, then ended by the target or the network while held"},
	{Name: "held", Help: "open at the end of the hold"},
	{Name: "errors", Help: "failed + dropped"},
	{Name: "rate", Help: "connections established a second"},
	{Name: "kib_per_conn", Help: "the target's resident memory per held connection, KiB"},
	{Name: "client_cpu", Help: "the client's CPU seconds"},
}

// Outcome is the run's, for loadgen's exit status and -threshold.
func (r *Report) Outcome() scenario.Outcome {
	errs := 0
	for _, c := range r.Errors {
		errs += c.Count
	}
	v := threshold.Values{
		"ok": float64(r.Established), "failed": float64(r.Failed), "dropped": float64(r.Dropped), "held": float64(r.Held),
		"errors": float64(errs), "client_cpu": r.ClientCPUSeconds,
	}
	if r.N > 0 {
		v["success"] = float64(r.Established) / float64(r.N)
	}
	if r.EstablishSeconds > 0 {
		v["rate"] = float64(r.Established) / r.EstablishSeconds
	}
	if k := r.KiBPerConnection(); k != nil {
		v["kib_per_conn"] = *k
	}
	return scenario.Outcome{Attempts: r.N, Connected: r.Established, Verdicts: r.Verdicts, Metrics: v}
}

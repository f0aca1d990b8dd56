package conns

import (
	"slices"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// metrics are what -threshold may name in a conns run.
var metrics = slices.Concat(
	threshold.Connected("connections established / -n", "connections established", "connections not established"),
	[]threshold.Metric{
		{Name: "dropped", Help: "established, then ended by the target or the network while held"},
		{Name: "held", Help: "open at the end of the hold"},
		{Name: "errors", Help: "failed + dropped"},
		{Name: "rate", Help: "connections established a second"},
		{Name: "kib_per_conn", Help: "the target's resident memory per held connection, KiB"},
	},
	threshold.CPU(""),
)

// Outcome is the run's, for loadgen's exit status and -threshold.
func (r *Report) Outcome() scenario.Outcome {
	out := scenario.Connections(r.N, r.Established, r.Failed, r.ClientCPUSeconds, r.Verdicts)
	v := out.Metrics
	v["dropped"], v["held"], v["errors"] = float64(r.Dropped), float64(r.Held), float64(tally.Total(r.Errors))
	if r.EstablishSeconds > 0 {
		v["rate"] = float64(r.Established) / r.EstablishSeconds
	}
	v.Known("kib_per_conn", r.KiBPerConnection())
	return out
}

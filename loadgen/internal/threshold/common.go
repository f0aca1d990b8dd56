package threshold

// The metrics and values most scenarios share, so that each scenario's
// list says only what is its own.

// Connected are success (ok over what was tried, a share), ok and failed,
// each with what it counts in the scenario.
func Connected(success, ok, failed string) []Metric {
	return []Metric{{Name: "success", Kind: Share, Help: success}, {Name: "ok", Help: ok}, {Name: "failed", Help: failed}}
}

// Latencies are duration metrics named names; the first carries help,
// which stands for them all.
func Latencies(help string, names ...string) []Metric {
	out := make([]Metric, len(names))
	for i, n := range names {
		out[i] = Metric{Name: n, Kind: Duration}
	}
	if len(out) > 0 {
		out[0].Help = help
	}
	return out
}

// CPU are client_cpu and server_cpu, the server's read from where ("" for
// a scenario that cannot read it: only client_cpu then).
func CPU(where string) []Metric {
	out := []Metric{{Name: "client_cpu", Help: "the client's CPU seconds"}}
	if where != "" {
		out = append(out, Metric{Name: "server_cpu", Help: "the server's CPU seconds (" + where + ")"})
	}
	return out
}

// Share sets v[name] to part / whole, when whole is not 0.
func (v Values) Share(name string, part, whole float64) {
	if whole != 0 {
		v[name] = part / whole
	}
}

// Known sets v[name] to *p, when p is known (not nil).
func (v Values) Known(name string, p *float64) {
	if p != nil {
		v[name] = *p
	}
}

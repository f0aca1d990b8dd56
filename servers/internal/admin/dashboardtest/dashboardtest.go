// Package dashboardtest reads the admin listener's dashboard in a browser
// for tests, and checks its figures against /stats documents.
package dashboardtest

import (
	"fmt"
	"math"
	"testing"

	"github.com/knowngood/knowngood/shared/browser"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Column is one column of the page's table: each figure's raw value by
// its key (nil where the page shows none), and the column's own details.
type Column struct {
	Figures  map[string]*float64
	Uptime   *float64 // uptime_seconds of the document shown
	Interval float64  // seconds between the two documents its rates come from
	Heading  string
}

// Page is what the dashboard shows at one moment: its columns by id ("0",
// "1", ... and "sum" for a cluster), and how many refreshes it has made.
type Page struct {
	Columns map[string]Column
	Polls   int
}

// readJS reads the table in one evaluation, so that no refresh lands
// half-way through it.
const readJS = `(() => {
  const cols = {};
  const col = id => (cols[id] = cols[id] || { Figures: {}, Uptime: null, Interval: 0, Heading: "" });
  document.querySelectorAll("#figures td[data-key]").forEach(td => {
    col(td.dataset.col).Figures[td.dataset.key] = td.dataset.value === "" || td.dataset.value === undefined ? null : Number(td.dataset.value);
  });
  document.querySelectorAll("#figures th[data-col]").forEach(th => {
    const c = col(th.dataset.col);
    c.Uptime = th.dataset.uptime ? Number(th.dataset.uptime) : null;
    c.Interval = Number(th.dataset.interval || 0);
    c.Heading = th.textContent;
  });
  return { Columns: cols, Polls: Number(document.body.dataset.polls) };
})()`

// Read reads the page's table.
func Read(t testing.TB, p *browser.Page) Page {
	t.Helper()
	return browser.Eval[Page](t, p, readJS)
}

// PollsJS is the page's refresh count, for WaitFor conditions.
const PollsJS = `Number(document.body.dataset.polls)`

// Counters are the cumulative figures of a /stats document by the keys of
// the page's table.
func Counters(s protocol.Stats) map[string]float64 {
	sum := func(m map[string]uint64) (n uint64) {
		for _, v := range m {
			n += v
		}
		return n
	}
	emfile := s.AcceptErrors["EMFILE"]
	return map[string]float64{
		"opened":         float64(s.ConnectionsTotal),
		"closed":         float64(sum(s.Disconnects)),
		"hs_ok":          float64(s.Handshakes[protocol.ResultOK]),
		"hs_rejected":    float64(s.Handshakes[protocol.ResultRejected]),
		"hs_failed":      float64(s.Handshakes[protocol.ResultFailed]),
		"hs_abandoned":   float64(s.Handshakes[protocol.ResultAbandoned]),
		"received":       float64(s.MessagesReceived),
		"sent":           float64(s.MessagesSent),
		"refused_emfile": float64(emfile),
		"refused_accept": float64(sum(s.AcceptErrors) - emfile),
		"refused_cap":    float64(s.MaxConnsRefused),
		"faults":         float64(sum(s.Faults)),
	}
}

// Rates pairs each per-second figure of the table with the counter it is
// the rate of.
var Rates = map[string]string{"hs_rate": "hs_ok", "in_rate": "received", "out_rate": "sent"}

// Exact lists how col differs from s, a /stats document of the same
// moment (nothing moved in between): every counter, connections_active,
// and the handshake percentiles since start (ms, as /stats has them).
func Exact(col Column, s protocol.Stats) []string {
	var bad []string
	want := Counters(s)
	want["active"] = float64(s.ConnectionsActive)
	if s.HandshakeLatency.Count > 0 {
		want["p50_all"], want["p99_all"] = s.HandshakeLatency.P50*1000, s.HandshakeLatency.P99*1000
	}
	for key, w := range want {
		if got := col.Figures[key]; got == nil || math.Abs(*got-w) > 1e-9*math.Max(1, w) {
			bad = append(bad, fmt.Sprintf("%s: the page shows %s, /stats %g", key, show(got), w))
		}
	}
	return bad
}

// Between lists how col, shown from two documents both taken after
// before and no later than after, disagrees with them: each counter lies
// between its values in the two; each rate times the interval it covers
// is no more than its counter's rise from before to after; and the
// active connections differ from before's by no more than the
// connections opened and closed meanwhile. The only tolerance is
// floating-point rounding (1e-6 relative): the bounds are exact.
func Between(col Column, before, after protocol.Stats) []string {
	var bad []string
	lo, hi := Counters(before), Counters(after)
	for key := range lo {
		got := col.Figures[key]
		if got == nil || *got < lo[key] || *got > hi[key] {
			bad = append(bad, fmt.Sprintf("%s: the page shows %s, outside /stats' %g to %g", key, show(got), lo[key], hi[key]))
		}
	}
	for rate, counter := range Rates {
		got := col.Figures[rate]
		rise := hi[counter] - lo[counter]
		if got == nil || *got < 0 || *got*col.Interval > rise*(1+1e-6)+1e-6 {
			bad = append(bad, fmt.Sprintf("%s: the page shows %s/s over %.3f s, but /stats' %s rose by %g in all", rate, show(got), col.Interval, counter, rise))
		}
	}
	moved := (hi["opened"] - lo["opened"]) + (hi["closed"] - lo["closed"])
	if got := col.Figures["active"]; got == nil || math.Abs(*got-float64(before.ConnectionsActive)) > moved {
		bad = append(bad, fmt.Sprintf("active: the page shows %s, /stats %d before with %g opened or closed since", show(got), before.ConnectionsActive, moved))
	}
	return bad
}

func show(v *float64) string {
	if v == nil {
		return "nothing"
	}
	return fmt.Sprintf("%g", *v)
}

package metrics

import (
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/protocol"
)

// TestStormPattern: clients that come back together are a herd, clients
// spread over a second (socket.io-client's jittered back-off) are spread,
// and too few or none say so; the seconds are binned from the drop.
func TestStormPattern(t *testing.T) {
	at := time.Unix(1000, 0)
	ms := func(d float64) time.Time { return at.Add(time.Duration(d * float64(time.Millisecond))) }
	for _, c := range []struct {
		name    string
		back    []float64 // ms after the drop
		pattern string
	}{
		{"none", nil, protocol.StormNone},
		{"few", []float64{3, 4, 5}, protocol.StormFew},
		{"herd", []float64{2, 3, 3, 4, 5, 6, 8, 9, 12, 15, 20, 31}, protocol.StormHerd},
		{"fixed delay", []float64{1000, 1001, 1003, 1004, 1010, 1012, 1020, 1040}, protocol.StormHerd},
		{"spread", []float64{520, 610, 700, 790, 880, 950, 1040, 1130, 1220, 1310, 1400, 1480}, protocol.StormSpread},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w stormWatch
			if w.report() != nil {
				t.Fatal("a report before any drop")
			}
			w.watch(at)
			w.setDropped(len(c.back))
			for _, d := range c.back {
				w.openedAt(ms(d))
			}
			r := w.report()
			if r.Pattern != c.pattern || r.Reconnects != uint64(len(c.back)) || r.Dropped != len(c.back) {
				t.Errorf("%+v; want pattern %s, %d back", r, c.pattern, len(c.back))
			}
			if len(c.back) > 0 && (r.FirstMs != c.back[0] || r.LastMs != c.back[len(c.back)-1]) {
				t.Errorf("first %v, last %v; want %v, %v", r.FirstMs, r.LastMs, c.back[0], c.back[len(c.back)-1])
			}
			t.Log(r.Says)
		})
	}
	var w stormWatch
	w.watch(at)
	for _, d := range []float64{10, 20, 1500, 2500, 2600, 2700} {
		w.openedAt(ms(d))
	}
	w.openedAt(ms(1e9)) // past the seconds binned: counted, not binned
	r := w.report()
	if want := []uint64{2, 1, 3}; len(r.PerSecond) != 3 || r.PerSecond[0] != 2 || r.PerSecond[1] != 1 || r.PerSecond[2] != 3 || r.PeakPerSecond != 3 || r.Reconnects != 7 {
		t.Errorf("per second %v, peak %d, reconnects %d; want %v, 3, 7", r.PerSecond, r.PeakPerSecond, r.Reconnects, want)
	}
}

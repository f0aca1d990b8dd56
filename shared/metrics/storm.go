package metrics

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knowngood/knowngood/shared/protocol"
)

// maxStormSamples bounds the reconnect times a storm keeps: past it, the
// reconnects are counted and binned by second, and the percentiles come
// from the first ones.
const maxStormSamples = 100_000

// stormWatch is the report of the last drop; a connection opened costs
// one atomic load while none is watched.
type stormWatch struct{ cur atomic.Pointer[storm] }

type storm struct {
	at      time.Time
	dropped int

	mu        sync.Mutex
	after     []time.Duration // each reconnect's time since the drop, up to maxStormSamples
	total     uint64
	perSecond [protocol.StormSeconds]uint64
}

func (w *stormWatch) watch(at time.Time) { w.cur.Store(&storm{at: at}) }

func (w *stormWatch) setDropped(n int) {
	if s := w.cur.Load(); s != nil {
		s.mu.Lock()
		s.dropped = n
		s.mu.Unlock()
	}
}

// opened records a connection opened, when a drop is being watched: the
// clock is read only then.
func (w *stormWatch) opened() {
	if w.cur.Load() != nil {
		w.openedAt(time.Now())
	}
}

func (w *stormWatch) openedAt(now time.Time) {
	s := w.cur.Load()
	if s == nil {
		return
	}
	d := now.Sub(s.at)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	if len(s.after) < maxStormSamples {
		s.after = append(s.after, d)
	}
	if sec := int(d / time.Second); sec < len(s.perSecond) {
		s.perSecond[sec]++
	}
}

// report is the storm's figures and pattern, nil before any drop.
func (w *stormWatch) report() *protocol.Storm {
	s := w.cur.Load()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	after := slices.Clone(s.after)
	r := &protocol.Storm{DroppedAt: s.at, Dropped: s.dropped, Reconnects: s.total}
	last := 0
	for i, n := range s.perSecond {
		if n > 0 {
			last = i + 1
		}
		r.PeakPerSecond = max(r.PeakPerSecond, n)
	}
	r.PerSecond = slices.Clone(s.perSecond[:last])
	s.mu.Unlock()

	slices.Sort(after) // they arrive in order, but a sort costs little and guards the percentiles
	ms := func(q float64) float64 {
		if len(after) == 0 {
			return 0
		}
		return float64(after[int(q*float64(len(after)-1))].Microseconds()) / 1000
	}
	r.FirstMs, r.P10Ms, r.P50Ms, r.P90Ms, r.LastMs = ms(0), ms(0.1), ms(0.5), ms(0.9), ms(1)
	r.Pattern, r.Says = stormPattern(r)
	return r
}

// stormPattern tells whether the clients came back together (a herd) or
// spread out, from the span of their 10th to 90th percentile.
func stormPattern(r *protocol.Storm) (string, string) {
	span := r.P90Ms - r.P10Ms
	switch {
	case r.Reconnects == 0:
		return protocol.StormNone, fmt.Sprintf("%d dropped; none has come back yet", r.Dropped)
	case r.Reconnects < protocol.StormMin:
		return protocol.StormFew, fmt.Sprintf("%d dropped, %d came back (first after %.0f ms): too few to tell a pattern", r.Dropped, r.Reconnects, r.FirstMs)
	case span < protocol.StormHerdMs:
		return protocol.StormHerd, fmt.Sprintf("%d dropped, %d came back, 80%% of them within %.0f ms of each other (%.0f-%.0f ms after the drop; peak %d/s): a herd, as clients without jitter in their back-off come back",
			r.Dropped, r.Reconnects, span, r.P10Ms, r.P90Ms, r.PeakPerSecond)
	default:
		return protocol.StormSpread, fmt.Sprintf("%d dropped, %d came back spread over %.0f ms (80%% between %.0f and %.0f ms after the drop; peak %d/s), as back-off with jitter spreads them",
			r.Dropped, r.Reconnects, span, r.P10Ms, r.P90Ms, r.PeakPerSecond)
	}
}

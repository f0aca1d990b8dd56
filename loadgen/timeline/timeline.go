// Package timeline keeps the per-second samples of a loadgen run: for each
// second from the start, how many events completed (messages echoed,
// handshakes, connections), how many failed, and the latency percentiles of
// those that completed. It also turns a run's whole HdrHistogram into the
// few buckets a distribution chart needs, and writes samples as CSV.
//
// Hot paths (one event per message) record into a Local, owned by one
// goroutine and merged into the Timeline under its lock only when the
// second changes; paths with one event per connection record into the
// Timeline directly.
package timeline

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/shared/protocol"
)

// Sample is one second of a run. Second 0 starts at the run's start; the
// last second may be cut short by the run's end.
type Sample struct {
	Second int `json:"second"`
	// Count is what completed in that second: its throughput.
	Count  int64 `json:"count"`
	Errors int64 `json:"errors"`
	// Latency of the Count events, in milliseconds; null when none.
	P50ms *float64 `json:"p50_ms"`
	P99ms *float64 `json:"p99_ms"`
	MaxMs *float64 `json:"max_ms"`
}

// The per-second histograms need percentiles for a chart, not for the
// summary (which comes from the run's full histogram): one significant
// figure (values within 1/16) keeps each one at a few KiB, so that a Local
// per connection stays cheap with thousands of connections.
const (
	lowestMicros  = 1
	highestMicros = int64(10 * time.Minute / time.Microsecond)
	sigFigs       = 1
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(lowestMicros, highestMicros, sigFigs)
}

// Timeline collects a run's samples; safe for concurrent use.
type Timeline struct {
	start time.Time
	mu    sync.Mutex
	secs  []*second // index: seconds since start
}

type second struct {
	errors int64
	lat    *hdrhistogram.Histogram // microseconds
}

// New starts a timeline whose second 0 begins at start.
func New(start time.Time) *Timeline { return &Timeline{start: start} }

// index is the second of t; -1 before the start.
func (tl *Timeline) index(t time.Time) int {
	d := t.Sub(tl.start)
	if d < 0 {
		return -1
	}
	return int(d / time.Second)
}

// at returns second i, adding it (and those before it) as needed; the
// caller holds mu.
func (tl *Timeline) at(i int) *second {
	for len(tl.secs) <= i {
		tl.secs = append(tl.secs, nil)
	}
	if tl.secs[i] == nil {
		tl.secs[i] = &second{lat: newHistogram()}
	}
	return tl.secs[i]
}

// Record counts one event that completed at t after taking latency. An
// event before the start is left out.
func (tl *Timeline) Record(t time.Time, latency time.Duration) {
	i := tl.index(t)
	if i < 0 {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	_ = tl.at(i).lat.RecordValue(max(1, latency.Microseconds())) // beyond 10 min is dropped
}

// Error counts one failure at t. A failure before the start is left out.
func (tl *Timeline) Error(t time.Time) {
	i := tl.index(t)
	if i < 0 {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.at(i).errors++
}

// Local records for one goroutine at a time, without a lock: it keeps the
// current second to itself and hands it to the Timeline when an event of
// another second comes, or on Flush.
type Local struct {
	tl  *Timeline
	sec int
	lat *hdrhistogram.Histogram
}

// Local returns a recorder for one goroutine; Flush it once that goroutine
// is done.
func (tl *Timeline) Local() *Local { return &Local{tl: tl, sec: -1, lat: newHistogram()} }

// Record counts one event that completed at t after latency microseconds.
// It costs a time subtraction and a histogram increment, and a merge under
// the Timeline's lock once a second.
func (l *Local) Record(t time.Time, micros int64) { l.RecordN(t, micros, 1) }

// RecordN counts n events that completed at t, each after latency
// microseconds.
func (l *Local) RecordN(t time.Time, micros, n int64) {
	i := l.tl.index(t)
	if i < 0 {
		return
	}
	if i != l.sec {
		l.Flush()
		l.sec = i
	}
	_ = l.lat.RecordValues(max(1, micros), n)
}

// Flush hands the current second to the Timeline.
func (l *Local) Flush() {
	if l.lat.TotalCount() == 0 {
		return
	}
	l.tl.mu.Lock()
	l.tl.at(l.sec).lat.Merge(l.lat)
	l.tl.mu.Unlock()
	l.lat.Reset()
}

// Samples lists every second from 0 to the end of span after the start,
// and any later second with an event, empty seconds included (a stall
// shows as zeros). Flush the Locals first.
func (tl *Timeline) Samples(span time.Duration) []Sample {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	n := max(len(tl.secs), int(math.Ceil(span.Seconds())))
	out := make([]Sample, n)
	for i := range out {
		out[i].Second = i
		if i >= len(tl.secs) || tl.secs[i] == nil {
			continue
		}
		s := tl.secs[i]
		out[i].Errors = s.errors
		if c := s.lat.TotalCount(); c > 0 {
			out[i].Count = c
			out[i].P50ms, out[i].P99ms, out[i].MaxMs = ms(s.lat.ValueAtPercentile(50)), ms(s.lat.ValueAtPercentile(99)), ms(s.lat.Max())
		}
	}
	return out
}

func ms(us int64) *float64 {
	v := float64(us) / 1000
	return &v
}

// Distribution groups h (microseconds) into buckets on a 1-2-5 scale
// (1 µs, 2 µs, 5 µs, 10 µs, ...), from the first non-empty one to the last,
// empty ones between included: the bars of a latency distribution chart.
// Each bucket holds the values above the previous bound up to its own.
func Distribution(h *hdrhistogram.Histogram) []protocol.Bucket {
	out := []protocol.Bucket{}
	if h.TotalCount() == 0 {
		return out
	}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		bound := scaleAbove(bar.To)
		if len(out) == 0 {
			out = append(out, protocol.Bucket{UpToMicros: bound})
		}
		for out[len(out)-1].UpToMicros < bound {
			out = append(out, protocol.Bucket{UpToMicros: scaleAbove(out[len(out)-1].UpToMicros + 1)})
		}
		out[len(out)-1].Count += bar.Count
	}
	return out
}

// scaleAbove is the least 1-2-5 bound at or above v.
func scaleAbove(v int64) int64 {
	for decade := int64(1); ; decade *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*decade >= v {
				return m * decade
			}
		}
	}
}

// CSVHeader is the header row of WriteCSV.
var CSVHeader = []string{"second", "count", "errors", "p50_ms", "p99_ms", "max_ms"}

// WriteCSV writes the samples as CSV: CSVHeader, then one row a second; a
// latency is empty in a second without events.
func WriteCSV(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
	f := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', 3, 64)
	}
	for _, s := range samples {
		_ = cw.Write([]string{strconv.Itoa(s.Second), strconv.FormatInt(s.Count, 10), strconv.FormatInt(s.Errors, 10), f(s.P50ms), f(s.P99ms), f(s.MaxMs)})
	}
	cw.Flush()
	return cw.Error()
}

// Total adds up the samples' counts and errors.
func Total(samples []Sample) (count, errors int64) {
	for _, s := range samples {
		count += s.Count
		errors += s.Errors
	}
	return count, errors
}

// HistogramOf rebuilds a protocol.NewHistogram from its non-empty buckets
// (protocol.Buckets): the same counts in the same buckets, so that the
// percentiles of several runs' histograms added together are exact.
func HistogramOf(buckets []protocol.Bucket) *hdrhistogram.Histogram {
	return protocol.HistogramOf(buckets)
}

// MergeSamples adds up the samples of runs that went on at the same time
// (the shards of one run), second by second: the counts and errors add
// up; the percentiles of a second cannot be added, so each is the
// highest of the runs' (an upper bound), and the max is the max.
func MergeSamples(runs [][]Sample) []Sample {
	var out []Sample
	for _, run := range runs {
		for _, s := range run {
			for len(out) <= s.Second {
				out = append(out, Sample{Second: len(out)})
			}
			m := &out[s.Second]
			m.Count += s.Count
			m.Errors += s.Errors
			m.P50ms, m.P99ms, m.MaxMs = maxPtr(m.P50ms, s.P50ms), maxPtr(m.P99ms, s.P99ms), maxPtr(m.MaxMs, s.MaxMs)
		}
	}
	if out == nil {
		out = []Sample{}
	}
	return out
}

func maxPtr(a, b *float64) *float64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

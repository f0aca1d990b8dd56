package timeline

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/protocol"
)

func TestSamples(t *testing.T) {
	start := time.Now()
	tl := New(start)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			l := tl.Local()
			defer l.Flush()
			// Second 0: 100 events of 1 ms per goroutine; second 2: 10 of
			// 50 ms; second 1 stays empty.
			for range 100 {
				l.Record(start.Add(time.Duration(g)*time.Millisecond), 1000)
			}
			for range 10 {
				l.Record(start.Add(2500*time.Millisecond), 50000)
			}
			l.Record(start.Add(-time.Second), 7) // before the start: left out
		})
	}
	wg.Wait()
	tl.Record(start.Add(3*time.Second), 2*time.Millisecond)
	tl.Error(start.Add(3 * time.Second))
	tl.Error(start.Add(-time.Second))

	got := tl.Samples(5 * time.Second)
	if len(got) != 5 {
		t.Fatalf("%d samples, want 5 (the span)", len(got))
	}
	want := []struct {
		count, errors int64
		p50           float64 // ms, within 1/16
	}{{400, 0, 1}, {0, 0, 0}, {40, 0, 50}, {1, 1, 2}, {0, 0, 0}}
	for i, w := range want {
		s := got[i]
		if s.Second != i || s.Count != w.count || s.Errors != w.errors {
			t.Errorf("second %d: %+v, want count %d errors %d", i, s, w.count, w.errors)
		}
		if w.count == 0 {
			if s.P50ms != nil {
				t.Errorf("second %d: p50 %v without events", i, *s.P50ms)
			}
			continue
		}
		if s.P50ms == nil || *s.P50ms < w.p50 || *s.P50ms > w.p50*17/16 {
			t.Errorf("second %d: p50 %v, want about %v", i, s.P50ms, w.p50)
		}
	}
	// Events past the span still get their second.
	tl.Record(start.Add(7*time.Second), time.Millisecond)
	if n := len(tl.Samples(5 * time.Second)); n != 8 {
		t.Errorf("%d samples, want 8", n)
	}
}

func TestDistribution(t *testing.T) {
	h := protocol.NewHistogram()
	for _, v := range []int64{3, 4, 5, 40, 41, 900} {
		_ = h.RecordValue(v)
	}
	got := Distribution(h)
	want := []protocol.Bucket{{UpToMicros: 5, Count: 3}, {UpToMicros: 10}, {UpToMicros: 20}, {UpToMicros: 50, Count: 2}, {UpToMicros: 100}, {UpToMicros: 200}, {UpToMicros: 500}, {UpToMicros: 1000, Count: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Distribution = %v, want %v", got, want)
	}
	if got := Distribution(protocol.NewHistogram()); got == nil || len(got) != 0 {
		t.Errorf("empty: %v, want []", got)
	}
}

func TestWriteCSV(t *testing.T) {
	tl := New(time.Now())
	tl.Record(time.Now(), 1500*time.Microsecond)
	var b bytes.Buffer
	if err := WriteCSV(&b, tl.Samples(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || !reflect.DeepEqual(rows[0], CSVHeader) {
		t.Fatalf("rows %q", rows)
	}
	if p50, err := strconv.ParseFloat(rows[1][3], 64); err != nil || p50 < 1.5 || p50 > 1.5*17/16 {
		t.Errorf("p50 %q, want about 1.5", rows[1][3])
	}
	if rows[1][1] != "1" || rows[2][1] != "0" || rows[2][3] != "" {
		t.Errorf("rows %q", rows[1:])
	}
}

// BenchmarkLocalRecord is the cost that the echo scenario adds to each
// message: one Local.Record (a second's change is rare).
func BenchmarkLocalRecord(b *testing.B) {
	start := time.Now()
	l := New(start).Local()
	at := start.Add(300 * time.Millisecond)
	for i := range b.N {
		l.Record(at, int64(100+i%1000))
	}
	l.Flush()
}

// TestMergeSamples: counts and errors add up second by second; a
// second's percentiles are the highest run's.
func TestMergeSamples(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	got := MergeSamples([][]Sample{
		{{Second: 0, Count: 10, P50ms: f(1), P99ms: f(5), MaxMs: f(6)}, {Second: 1, Count: 4, Errors: 1, P50ms: f(2), P99ms: f(2), MaxMs: f(2)}},
		{{Second: 0, Count: 5, P50ms: f(3), P99ms: f(4), MaxMs: f(9)}},
	})
	if len(got) != 2 || got[0].Count != 15 || *got[0].P50ms != 3 || *got[0].P99ms != 5 || *got[0].MaxMs != 9 || got[1].Count != 4 || got[1].Errors != 1 {
		t.Errorf("MergeSamples = %+v", got)
	}
	if got := MergeSamples(nil); got == nil || len(got) != 0 {
		t.Errorf("MergeSamples(nil) = %#v", got)
	}
}

// TestHistogramOf: a histogram rebuilt from its buckets, and two added
// together, give the percentiles of all the values at once.
func TestHistogramOf(t *testing.T) {
	a, b, all := protocol.NewHistogram(), protocol.NewHistogram(), protocol.NewHistogram()
	for v := int64(1); v <= 1000; v++ {
		h := a
		if v%3 == 0 {
			h = b
		}
		_ = h.RecordValue(v * 37)
		_ = all.RecordValue(v * 37)
	}
	m := HistogramOf(protocol.Buckets(a))
	m.Merge(HistogramOf(protocol.Buckets(b)))
	for _, p := range []float64{50, 90, 99, 99.9, 100} {
		if m.ValueAtPercentile(p) != all.ValueAtPercentile(p) {
			t.Errorf("p%v: merged %d, all at once %d", p, m.ValueAtPercentile(p), all.ValueAtPercentile(p))
		}
	}
	if m.TotalCount() != 1000 || m.Max() != all.Max() {
		t.Errorf("merged %d values, max %d; want 1000, %d", m.TotalCount(), m.Max(), all.Max())
	}
}

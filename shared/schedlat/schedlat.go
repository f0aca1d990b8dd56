// Package schedlat reads the Go runtime's scheduling latency: how long
// the process's goroutines waited to run once they were ready
// (/sched/latencies:seconds, which the runtime samples: some of the
// goroutines scheduled, not all). A process short of CPU, or whose goroutines
// queue behind each other, holds whatever it serves for that long; on a
// machine shared with other processes it is where their contention shows
// in this one.
package schedlat

import (
	"math"
	"runtime/metrics"

	"github.com/knowngood/knowngood/shared/protocol"
)

const name = "/sched/latencies:seconds"

// Buckets is the scheduling latency since the process started, as the
// non-empty buckets of /stats (upper bounds in µs); nil when the runtime
// does not have it. Two readings' DiffBuckets is the window between.
func Buckets() []protocol.Bucket {
	sample := []metrics.Sample{{Name: name}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	h := sample[0].Value.Float64Histogram()
	var out []protocol.Bucket
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		upTo := h.Buckets[i+1]
		if math.IsInf(upTo, 1) {
			upTo = h.Buckets[i]
		}
		us := max(int64(math.Ceil(upTo*1e6)), 1)
		if k := len(out) - 1; k >= 0 && out[k].UpToMicros == us {
			out[k].Count += int64(n) // runtime buckets finer than a µs
			continue
		}
		out = append(out, protocol.Bucket{UpToMicros: us, Count: int64(n)})
	}
	return out
}

// Since is the scheduling latency from the reading before to now, and
// now's reading for the next call.
func Since(before []protocol.Bucket) (window protocol.Distribution, now []protocol.Bucket) {
	now = Buckets()
	return protocol.DistributionOf(protocol.DiffBuckets(before, now)), now
}

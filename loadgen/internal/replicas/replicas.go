// Package replicas reads /stats from every replica of a target that runs
// as several processes (a cluster behind a proxy, each replica with its own
// admin listener) and makes one server's view of them: the sum over the
// replicas of what each counted, with each replica's own part kept beside
// it so that a loss can be placed on the replica that counted it.
//
// Counts, gauges (connections active, resident memory) and CPU seconds
// add up. The handshake latency histograms add up bucket by bucket (every
// replica uses the same buckets), so the percentiles of the sum are those
// of every handshake together, not an average of percentiles.
package replicas

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/knowngood/knowngood/loadgen/internal/statsclient"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Split parses a comma-separated list of admin URLs; each one is resolved
// as statsclient.AdminURL does (HOST:PORT or http(s)://HOST:PORT). The
// error names the flag, on one line.
func Split(value string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		admin, err := statsclient.AdminURL(part, true, "")
		if err != nil || admin == "" {
			return nil, fmt.Errorf("invalid value %q for flag -admin: want http://HOST:PORT, several separated by commas (one per replica), or '' for none", value)
		}
		if seen[admin] {
			return nil, fmt.Errorf("invalid value %q for flag -admin: %s is given twice", value, admin)
		}
		seen[admin] = true
		out = append(out, admin)
	}
	return out, nil
}

// Read is one replica's /stats read.
type Read struct {
	Admin    string
	Snapshot statsclient.Snapshot
	Err      error
}

// Set reads the admin listeners of every replica.
type Set struct {
	admins  []string
	clients []*statsclient.Client
}

// New returns a set for the admin listeners at admins.
func New(admins []string) *Set {
	s := &Set{admins: admins}
	for _, a := range admins {
		s.clients = append(s.clients, statsclient.New(a))
	}
	return s
}

// Close drops the clients' idle connections.
func (s *Set) Close() {
	for _, c := range s.clients {
		c.Close()
	}
}

// Get reads every replica's /stats at once, in the order of the admins.
func (s *Set) Get(ctx context.Context) []Read {
	out := make([]Read, len(s.clients))
	var wg sync.WaitGroup
	for i, c := range s.clients {
		wg.Go(func() {
			snap, err := c.Get(ctx)
			out[i] = Read{Admin: s.admins[i], Snapshot: snap, Err: err}
		})
	}
	wg.Wait()
	return out
}

// Config is the configuration of the first replica that gives one (the
// replicas of one target run with the same flags).
func (s *Set) Config(ctx context.Context) (map[string]string, error) {
	var errs []error
	for _, c := range s.clients {
		cfg, err := c.Config(ctx)
		if err == nil {
			return cfg, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// FreeOSMemory asks every replica to return its free memory to the OS.
func (s *Set) FreeOSMemory(ctx context.Context) error {
	var errs []error
	for _, c := range s.clients {
		errs = append(errs, c.FreeOSMemory(ctx))
	}
	return errors.Join(errs...)
}

// Answered is how many of reads were read.
func Answered(reads []Read) int {
	n := 0
	for _, r := range reads {
		if r.Err == nil {
			n++
		}
	}
	return n
}

// Sum adds up the snapshots that were read; the error joins every
// replica's when none was.
func Sum(reads []Read) (statsclient.Snapshot, error) {
	var sum statsclient.Snapshot
	var errs []error
	n := 0
	for _, r := range reads {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Admin, r.Err))
			continue
		}
		add(&sum, r.Snapshot, n == 0)
		n++
	}
	if n == 0 {
		return statsclient.Snapshot{}, errors.Join(errs...)
	}
	return sum, nil
}

// Common sums before and after over the replicas read both times, so that
// their difference is what those replicas counted in between; missing
// names the others.
func Common(before, after []Read) (b, a statsclient.Snapshot, missing []Read) {
	var bs, as []Read
	for i := range after {
		switch {
		case i >= len(before):
		case before[i].Err != nil:
			missing = append(missing, before[i])
		case after[i].Err != nil:
			missing = append(missing, after[i])
		default:
			bs, as = append(bs, before[i]), append(as, after[i])
		}
	}
	b, _ = Sum(bs)
	a, _ = Sum(as)
	return b, a, missing
}

// add adds s into sum; first: sum is empty and takes s's identity.
func add(sum *statsclient.Snapshot, s statsclient.Snapshot, first bool) {
	if first {
		sum.Variant, sum.UptimeSeconds = s.Variant, s.UptimeSeconds
		sum.CPUSeconds, sum.ResidentBytes = copyPtr(s.CPUSeconds), copyPtr(s.ResidentBytes)
	} else {
		if sum.Variant != s.Variant && !strings.Contains("+"+sum.Variant+"+", "+"+s.Variant+"+") {
			sum.Variant += "+" + s.Variant
		}
		sum.UptimeSeconds = min(sum.UptimeSeconds, s.UptimeSeconds)
		sum.CPUSeconds, sum.ResidentBytes = addPtr(sum.CPUSeconds, s.CPUSeconds), addPtr(sum.ResidentBytes, s.ResidentBytes)
	}
	sum.Stats = AddStats(sum.Stats, s.Stats)
	sum.Stats.Variant, sum.Stats.UptimeSeconds = sum.Variant, sum.UptimeSeconds
}

// AddStats is a + b: every count, gauge and CPU time added, the handshake
// histograms added bucket by bucket and their percentiles taken again.
// Identity (variant, uptime) comes from a, or from b when a has none.
func AddStats(a, b protocol.Stats) protocol.Stats {
	out := a
	if out.Variant == "" {
		out.Variant, out.UptimeSeconds = b.Variant, b.UptimeSeconds
	}
	out.ConnectionsActive = a.ConnectionsActive + b.ConnectionsActive
	out.ConnectionsTotal = a.ConnectionsTotal + b.ConnectionsTotal
	out.Handshakes = addMap(a.Handshakes, b.Handshakes)
	out.HandshakesByTransport = addMap2(a.HandshakesByTransport, b.HandshakesByTransport)
	out.HandshakeHistogram = addBuckets(a.HandshakeHistogram, b.HandshakeHistogram)
	out.HandshakeLatency = protocol.LatencyOf(timeline.HistogramOf(out.HandshakeHistogram))
	out.MessagesReceived = a.MessagesReceived + b.MessagesReceived
	out.MessagesSent = a.MessagesSent + b.MessagesSent
	out.BytesReceived = a.BytesReceived + b.BytesReceived
	out.BytesSent = a.BytesSent + b.BytesSent
	out.Disconnects = addMap(a.Disconnects, b.Disconnects)
	out.BroadcastDropped = a.BroadcastDropped + b.BroadcastDropped
	out.InvalidMessages = addMap(a.InvalidMessages, b.InvalidMessages)
	out.Faults = addMap(a.Faults, b.Faults)
	out.AcceptErrors = addMap(a.AcceptErrors, b.AcceptErrors)
	out.Timeouts = addMap2(a.Timeouts, b.Timeouts)
	out.CPUSeconds = a.CPUSeconds + b.CPUSeconds
	out.ResidentBytes = a.ResidentBytes + b.ResidentBytes
	out.ListenQueue = addListenQueue(a.ListenQueue, b.ListenQueue)
	return out
}

// addListenQueue sums the replicas' accept queues; of the kernel's
// counts it keeps the larger, since they count a whole network namespace:
// replicas on one machine share it, and a sum would count each drop once
// per replica (replicas on several machines are then under-counted).
func addListenQueue(a, b *protocol.ListenQueue) *protocol.ListenQueue {
	if a == nil || b == nil {
		if a == nil {
			a = b
		}
		if a == nil {
			return nil
		}
		q := *a
		return &q
	}
	q := protocol.ListenQueue{Overflows: max(a.Overflows, b.Overflows), Drops: max(a.Drops, b.Drops), Queued: -1, Limit: -1}
	if a.Queued >= 0 && b.Queued >= 0 {
		q.Queued, q.Limit = a.Queued+b.Queued, a.Limit+b.Limit
	}
	return &q
}

func addMap(a, b map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

func addMap2(a, b map[string]map[string]uint64) map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	for k, v := range a {
		out[k] = addMap(out[k], v)
	}
	for k, v := range b {
		out[k] = addMap(out[k], v)
	}
	return out
}

func addBuckets(a, b []protocol.Bucket) []protocol.Bucket {
	n := map[int64]int64{}
	for _, x := range a {
		n[x.UpToMicros] += x.Count
	}
	for _, x := range b {
		n[x.UpToMicros] += x.Count
	}
	out := []protocol.Bucket{}
	for up, c := range n {
		out = append(out, protocol.Bucket{UpToMicros: up, Count: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpToMicros < out[j].UpToMicros })
	return out
}

func copyPtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// addPtr is a + b; nil when either is unknown.
func addPtr(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	v := *a + *b
	return &v
}

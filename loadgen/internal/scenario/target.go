package scenario

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/statsclient"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Target is the target's admin listener for one run: its /stats, and its
// effective configuration read once at the start. Without an admin
// listener every read gives nil. A target of several replicas has one
// admin listener each (Admin lists them, separated by commas): a read is
// then the sum over the replicas that answered, each one's read kept
// beside it.
type Target struct {
	Admin string
	// Config is the target's configuration keyed by flag name (from
	// /health); nil when unknown, and the verdicts that need it are left
	// out.
	Config map[string]string
	stats  *statsclient.Client
	set    *replicas.Set // several replicas
	err    error         // why a dns+ admin has no listeners: every read fails with it
}

// Open opens the admin listener at admin ("" for none; several separated
// by commas; a dns+ one stands for every address its name resolves to
// now) and reads its configuration.
func Open(ctx context.Context, admin string) *Target {
	t := &Target{Admin: admin}
	if admin == "" {
		return t
	}
	var admins []string
	for _, a := range strings.Split(admin, ",") {
		expanded, err := statsclient.Expand(ctx, a)
		if err != nil {
			t.err = err
			return t
		}
		admins = append(admins, expanded...)
	}
	if len(admins) > 1 {
		if _, err := replicas.Split(strings.Join(admins, ",")); err != nil {
			t.err = fmt.Errorf("-admin %s: %w", admin, err) // a name resolved to an address also given
			return t
		}
	}
	admin = strings.Join(admins, ",")
	t.Admin = admin
	switch {
	case len(admins) > 1:
		t.set = replicas.New(admins)
		t.Config, _ = t.set.Config(ctx)
	default:
		t.stats = statsclient.New(admin)
		t.Config, _ = t.stats.Config(ctx) // without it, the verdicts that need it are left out
	}
	return t
}

// Close drops the client's idle connections.
func (t *Target) Close() {
	if t.stats != nil {
		t.stats.Close()
	}
	if t.set != nil {
		t.set.Close()
	}
}

// Snapshot is one /stats read: the document, or why it failed. Of several
// replicas, Stats is the sum over those that answered and Err is set only
// when none did.
type Snapshot struct {
	Stats statsclient.Snapshot
	Err   error
	// Reads are the replicas' own reads, in the order of -admin (one for
	// a single admin listener).
	Reads []replicas.Read
}

// summed is the snapshot of reads.
func summed(reads []replicas.Read) *Snapshot {
	s := &Snapshot{Reads: reads}
	s.Stats, s.Err = replicas.Sum(reads)
	return s
}

// single is the snapshot of one admin listener's read.
func (t *Target) single(s statsclient.Snapshot, err error) *Snapshot {
	return &Snapshot{Stats: s, Err: err, Reads: []replicas.Read{{Admin: t.Admin, Snapshot: s, Err: err}}}
}

// Pair is before and after summed over the replicas that answered both
// times, so that their difference is what those replicas counted in
// between; of a single admin listener, before and after as they are.
func Pair(before, after *Snapshot) (*Snapshot, *Snapshot) {
	if before == nil || after == nil || len(after.Reads) < 2 || !before.OK() || !after.OK() {
		return before, after
	}
	b, a, _ := replicas.Common(before.Reads, after.Reads)
	pb, pa := &Snapshot{Stats: b, Reads: before.Reads}, &Snapshot{Stats: a, Reads: after.Reads}
	if a.Variant == "" {
		err := errors.New("no replica answered both before and after the run")
		pb.Err, pa.Err = err, err
	}
	return pb, pa
}

// Parts is each replica's part between before and after; nil unless both
// were taken.
func Parts(before, after *Snapshot) []replicas.Replica {
	if before == nil || after == nil {
		return nil
	}
	return replicas.Parts(before.Reads, after.Reads)
}

// OK reports whether s was read.
func (s *Snapshot) OK() bool { return s != nil && s.Err == nil }

// Failure is why s could not be read; nil when it was, or when it was
// not taken (s nil: no admin listener).
func (s *Snapshot) Failure() error {
	if s == nil {
		return nil
	}
	return s.Err
}

// Snapshot reads /stats now; nil without an admin listener.
func (t *Target) Snapshot(ctx context.Context) *Snapshot {
	switch {
	case t.err != nil:
		return t.single(statsclient.Snapshot{}, t.err)
	case t.set != nil:
		return summed(t.set.Get(ctx))
	case t.stats == nil:
		return nil
	}
	return t.single(t.stats.Get(ctx))
}

// Settled reads /stats once the server has seen the run's connections go
// (as many active as at before), or after wait; nil without an admin
// listener or a good before.
func (t *Target) Settled(ctx context.Context, before *Snapshot, wait time.Duration) *Snapshot {
	return t.Await(ctx, before, wait, func(before, now protocol.Stats) bool {
		return now.ConnectionsActive <= before.ConnectionsActive
	})
}

// pollEvery is how often Await reads /stats.
const pollEvery = 50 * time.Millisecond

// Await reads /stats until done holds between before and the read (of
// several replicas, both summed over those that answered both times), and
// returns that read; after wait, it returns the last read, or of several
// replicas the last with the most of them answering. nil without an admin
// listener or a good before.
func (t *Target) Await(ctx context.Context, before *Snapshot, wait time.Duration, done func(before, now protocol.Stats) bool) *Snapshot {
	if !before.OK() || (t.set == nil && t.stats == nil) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last *Snapshot
	for {
		now := t.Snapshot(ctx)
		if last == nil || answered(now) >= answered(last) {
			last = now
		}
		if b, a := Pair(before, now); a.OK() && done(b.Stats.Stats, a.Stats.Stats) {
			return now
		}
		select {
		case <-ctx.Done():
			return last
		case <-tick.C:
		}
	}
}

// answered is how many admin listeners s read.
func answered(s *Snapshot) int { return replicas.Answered(s.Reads) }

// FreeOSMemory asks the target to return its free memory to the OS (see
// statsclient.Client.FreeOSMemory); nothing without an admin listener.
func (t *Target) FreeOSMemory(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if t.set != nil {
		return t.set.FreeOSMemory(ctx)
	}
	if t.stats == nil {
		return nil
	}
	return t.stats.FreeOSMemory(ctx)
}

// Diff is what the server counted between two reads; nil unless both
// were read.
func Diff(before, after *Snapshot) *protocol.Stats {
	before, after = Pair(before, after)
	if !before.OK() || !after.OK() {
		return nil
	}
	d := protocol.Diff(before.Stats.Stats, after.Stats.Stats)
	return &d
}

// CPU is the server's CPU seconds between two reads; nil unless both
// were read and report it.
func CPU(before, after *Snapshot) *float64 {
	before, after = Pair(before, after)
	if !before.OK() || !after.OK() || before.Stats.CPUSeconds == nil || after.Stats.CPUSeconds == nil {
		return nil
	}
	cpu := *after.Stats.CPUSeconds - *before.Stats.CPUSeconds
	return &cpu
}

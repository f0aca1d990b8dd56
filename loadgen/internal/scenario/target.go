package scenario

import (
	"context"
	"time"

	"knowngood/loadgen/internal/statsclient"
	"knowngood/shared/protocol"
)

// Target is the target's admin listener for one run: its /stats, and its
// effective configuration read once at the start. Without an admin
// listener every read gives nil.
type Target struct {
	Admin string
	// Config is the target's configuration keyed by flag name (from
	// /health); nil when unknown, and the verdicts that need it are left
	// out.
	Config map[string]string
	stats  *statsclient.Client
}

// Open opens the admin listener at admin ("" for none) and reads its
// configuration.
func Open(ctx context.Context, admin string) *Target {
	t := &Target{Admin: admin}
	if admin == "" {
		return t
	}
	t.stats = statsclient.New(admin)
	t.Config, _ = t.stats.Config(ctx) // without it, the verdicts that need it are left out
	return t
}

// Close drops the client's idle connections.
func (t *Target) Close() {
	if t.stats != nil {
		t.stats.Close()
	}
}

// Snapshot is one /stats read: the document, or why it failed.
type Snapshot struct {
	Stats statsclient.Snapshot
	Err   error
}

// OK reports whether s was read.
func (s *Snapshot) OK() bool { return s != nil && s.Err == nil }

// Snapshot reads /stats now; nil without an admin listener.
func (t *Target) Snapshot(ctx context.Context) *Snapshot {
	if t.stats == nil {
		return nil
	}
	s, err := t.stats.Get(ctx)
	return &Snapshot{Stats: s, Err: err}
}

// Settled reads /stats once the server has seen the run's connections go
// (as many active as at before), or after wait; nil without an admin
// listener or a good before.
func (t *Target) Settled(ctx context.Context, before *Snapshot, wait time.Duration) *Snapshot {
	if t.stats == nil || !before.OK() {
		return nil
	}
	s, err := t.stats.Settled(ctx, before.Stats, wait)
	return &Snapshot{Stats: s, Err: err}
}

// FreeOSMemory asks the target to return its free memory to the OS (see
// statsclient.Client.FreeOSMemory); nothing without an admin listener.
func (t *Target) FreeOSMemory(ctx context.Context) error {
	if t.stats == nil {
		return nil
	}
	return t.stats.FreeOSMemory(ctx)
}

// Diff is what the server counted between two reads; nil unless both
// were read.
func Diff(before, after *Snapshot) *protocol.Stats {
	if !before.OK() || !after.OK() {
		return nil
	}
	d := protocol.Diff(before.Stats.Stats, after.Stats.Stats)
	return &d
}

// CPU is the server's CPU seconds between two reads; nil unless both
// were read and report it.
func CPU(before, after *Snapshot) *float64 {
	if !before.OK() || !after.OK() || before.Stats.CPUSeconds == nil || after.Stats.CPUSeconds == nil {
		return nil
	}
	cpu := *after.Stats.CPUSeconds - *before.Stats.CPUSeconds
	return &cpu
}

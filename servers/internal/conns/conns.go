// Package conns holds what every target does with the connections it
// holds, whatever library serves them: refuse accepts cleanly when
// descriptors run out (Guard), cap them (-max-conns, Gate), track them for
// shutdown and drain them (Registry, Drain), and tell a client that left
// from a server that gave up (ClientLeft).
package conns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"time"
)

// Registry is the set of connections a target has to tell when it shuts
// down. Once closing, it refuses new entries, and Wait returns when the
// last one has left.
type Registry[T comparable] struct {
	mu      sync.Mutex
	peers   map[T]struct{}
	closing bool
	empty   chan struct{}
}

func NewRegistry[T comparable]() *Registry[T] {
	return &Registry[T]{peers: map[T]struct{}{}, empty: make(chan struct{})}
}

// Add registers p; false once the registry is closing.
func (r *Registry[T]) Add(p T) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return false
	}
	r.peers[p] = struct{}{}
	return true
}

func (r *Registry[T]) Remove(p T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.peers, p)
	r.signalEmptyLocked()
}

// Close refuses new entries and returns the current ones.
func (r *Registry[T]) Close() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closing = true
	r.signalEmptyLocked()
	return r.snapshotLocked()
}

// Snapshot returns the current entries.
func (r *Registry[T]) Snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

func (r *Registry[T]) snapshotLocked() []T {
	out := make([]T, 0, len(r.peers))
	for p := range r.peers {
		out = append(out, p)
	}
	return out
}

func (r *Registry[T]) signalEmptyLocked() {
	if !r.closing || len(r.peers) > 0 {
		return
	}
	select {
	case <-r.empty:
	default:
		close(r.empty)
	}
}

// Wait returns true once a closing registry is empty, false if ctx ends
// first.
func (r *Registry[T]) Wait(ctx context.Context) bool {
	select {
	case <-r.empty:
		return true
	case <-ctx.Done():
		return false
	}
}

// Drain is the shutdown sequence every target follows: tell every peer
// (goAway), wait for them to leave for half the time left, then drop the
// ones still there (kill) and wait for them to go.
func Drain[T comparable](ctx context.Context, r *Registry[T], goAway, kill func(T)) error {
	return DrainWith(ctx,
		func() error {
			for _, p := range r.Close() {
				goAway(p)
			}
			return nil
		},
		r.Wait,
		func() error {
			for _, p := range r.Snapshot() {
				kill(p)
			}
			return nil
		})
}

// DrainWith is Drain for peers kept elsewhere than in a Registry:
// goAwayAll tells every peer, gone reports whether all have left before
// its ctx ends, and killAll drops those still there.
func DrainWith(ctx context.Context, goAwayAll func() error, gone func(context.Context) bool, killAll func() error) error {
	if err := goAwayAll(); err != nil {
		return err
	}
	grace := 2 * time.Second
	if deadline, ok := ctx.Deadline(); ok {
		grace = time.Until(deadline) / 2
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if gone(gctx) {
		return nil
	}
	if err := killAll(); err != nil {
		return err
	}
	if !gone(ctx) {
		return ctx.Err()
	}
	return nil
}

// AcceptBackoff is the pause after a failed accept, doubled from 5 ms up to
// 1 s as net/http does, so that EMFILE does not spin a core.
func AcceptBackoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return 5 * time.Millisecond
	}
	return min(2*prev, time.Second)
}

// AcceptErrorReason names an accept error for the accept_errors metric:
// the errno's name (EMFILE, ENFILE, ...) where there is one.
func AcceptErrorReason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := errnoName(errno); name != "" {
			return name
		}
	}
	return "other"
}

// ClientLeft reports whether err means that the peer went away (EOF or a
// reset), as opposed to the server giving up (a timeout) or a bad request.
func ClientLeft(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// LogPanic turns a panic in a connection's code into a log line: a bug
// costs that connection, never the process.
func LogPanic(log *slog.Logger, where string, v any) {
	log.Error("panic serving a connection", "where", where, "panic", fmt.Sprint(v))
}

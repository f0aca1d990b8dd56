// Package control is what a target does when told to at run time from its
// admin listener: drop a fraction of its clients now (POST /control/drop),
// so that a client's reconnection and back-off can be tested against a
// storm the target reports (/stats "storm"); start or stop its timed push
// (POST /control/push); switch its known-bad modes (POST /control/fault).
package control

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/knowngood/knowngood/shared/faults"
)

// How is how a drop closes each connection it picks.
type How struct {
	// Code is the close code the WebSocket targets send (1001 going away,
	// 1012 service restart...).
	Code int
	// Disconnect, on the Socket.IO targets, sends each socket picked a
	// Socket.IO DISCONNECT: the client's "io server disconnect", after
	// which socket.io-client does not reconnect by itself. Otherwise the
	// Engine.IO session picked is closed under its client, as a server
	// that went away closes it: "transport close", after which the client
	// reconnects with its back-off.
	Disconnect bool
}

// Dropper is a target that drops clients on demand.
type Dropper interface {
	// Drop starts closing a random fraction (0 < fraction <= 1) of the
	// connections (Socket.IO: sessions, or sockets with how.Disconnect)
	// open now, as how says, and returns how many it picked and how many
	// were open.
	Drop(fraction float64, how How) (dropped, open int)
}

// Push is the timed push a target runs: off, or every Interval a payload
// of Size bytes.
type Push struct {
	On       bool
	Interval time.Duration
	Size     int
}

// Pusher is a target with a timed push (the broadcast and Socket.IO
// targets) that can be started, changed or stopped while it serves.
type Pusher interface {
	// SetPush starts the push as p says (replacing the one running, whose
	// numbering ends with it), or stops it, and returns the push now
	// running. Zero Interval or Size keep the -push-interval and
	// -push-size given at start (1 s and 100 bytes when none was).
	SetPush(p Push) (Push, error)
}

// Faulter is a target whose known-bad modes (-fault-*) can be switched
// while it serves.
type Faulter interface {
	// Faults is the injector that every point of the target where a fault
	// can strike asks.
	Faults() *faults.Injector
}

// ErrStopped is SetPush's answer once the target is shutting down.
var ErrStopped = errors.New("the target is shutting down")

// Defaults fills p's zero Interval and Size from the flags, or 1 s and 100
// bytes.
func (p Push) Defaults(interval time.Duration, size int) Push {
	if p.Interval <= 0 {
		p.Interval = interval
	}
	if p.Interval <= 0 {
		p.Interval = time.Second
	}
	if p.Size <= 0 {
		p.Size = size
	}
	if p.Size <= 0 {
		p.Size = 100
	}
	return p
}

// Pick returns which of n to drop for fraction: ceil(fraction x n) of them
// at random, so that a drop of 0.1 of 5 clients drops one.
func Pick(n int, fraction float64) []int {
	k := min(int(math.Ceil(fraction*float64(n))), n)
	return rand.Perm(n)[:k]
}

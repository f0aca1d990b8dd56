package protocol

import "time"

// Storm is what a target saw of its clients coming back after a drop
// ordered from its admin listener (POST /control/drop): /stats' "storm".
// A target cannot tell a returning client from a new one, so every
// connection opened after the drop counts as a reconnect.
type Storm struct {
	DroppedAt time.Time `json:"dropped_at"`
	Dropped   int       `json:"dropped"`
	// Reconnects are the connections opened since the drop.
	Reconnects uint64 `json:"reconnects"`
	// When they came, in ms after the drop: the first, the 10th, 50th
	// and 90th percentiles, and the last.
	FirstMs float64 `json:"first_ms"`
	P10Ms   float64 `json:"p10_ms"`
	P50Ms   float64 `json:"p50_ms"`
	P90Ms   float64 `json:"p90_ms"`
	LastMs  float64 `json:"last_ms"`
	// PerSecond counts them in each second after the drop (up to the
	// last second that had one, at most StormSeconds); PeakPerSecond is
	// the largest.
	PerSecond     []uint64 `json:"per_second"`
	PeakPerSecond uint64   `json:"peak_per_second"`
	// Pattern is StormNone, StormFew, StormHerd or StormSpread; Says puts
	// it in a sentence with the figures.
	Pattern string `json:"pattern"`
	Says    string `json:"says"`
}

// StormSeconds is how many seconds after a drop Storm.PerSecond covers.
const StormSeconds = 120

// Storm patterns.
const (
	StormNone   = "none"   // no client has come back yet
	StormFew    = "few"    // fewer than StormMin came back: too few to tell
	StormHerd   = "herd"   // most came back together: no jitter in their back-off
	StormSpread = "spread" // they came back spread out, as back-off with jitter spreads them
)

// StormMin is the fewest reconnects a pattern is told from.
const StormMin = 5

// StormHerdMs: reconnects whose 10th-90th percentile span is under this
// came back together. A client with a random back-off (socket.io-client's
// default: 1 s, randomization 0.5) spreads its first try over 1 s; clients
// that retry at once, or all after the same fixed delay, come back within
// tens of milliseconds of each other.
const StormHerdMs = 250

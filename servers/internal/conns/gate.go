package conns

import "sync/atomic"

// Gate caps the connections held at once (-max-conns). A nil *Gate lets
// everything through.
type Gate struct {
	max  int64
	held atomic.Int64
}

// NewGate returns a gate for max connections; nil when max is 0 (no cap).
func NewGate(max int) *Gate {
	if max <= 0 {
		return nil
	}
	return &Gate{max: int64(max)}
}

// TryAcquire takes a place if one is free.
func (g *Gate) TryAcquire() bool {
	if g == nil {
		return true
	}
	for {
		n := g.held.Load()
		if n >= g.max {
			return false
		}
		if g.held.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release gives a place back; call it once per successful TryAcquire.
func (g *Gate) Release() {
	if g != nil {
		g.held.Add(-1)
	}
}

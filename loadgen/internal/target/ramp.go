package target

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
)

// Error kinds: why a connection was not established.
const (
	KindTimeout   = "timeout"
	KindRefused   = "refused"
	KindReset     = "reset"
	KindNoPorts   = "no source port" // EADDRNOTAVAIL: the source's ephemeral ports ran out
	KindNoFiles   = "too many open files"
	KindHandshake = "upgrade refused"
	KindOther     = "other"
)

// ErrorKind sorts a failed dial.
func ErrorKind(err error) string {
	var netErr net.Error
	var refused *Refused
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return KindReset
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EADDRINUSE):
		return KindNoPorts
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return KindNoFiles
	case isTLSError(err):
		return KindTLS
	case errors.As(err, &refused):
		return refused.Kind()
	case errors.Is(err, websocket.ErrBadHandshake):
		return KindHandshake
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return KindTimeout
	}
	return KindOther
}

// Batch is one batch of connections dialled at once.
type Batch struct {
	Connections int     `json:"connections"`
	Established int     `json:"established"`
	Failed      int     `json:"failed"`
	Seconds     float64 `json:"seconds"` // from the batch's start to its last connection's end
}

// Ramp dials n connections, batch at a time: the next batch starts when
// this one is done. Connection i is dialled from sources[i % len(sources)]
// (none: the kernel's choice) by dial, whose failures go to errs by kind.
// It stops early when ctx ends.
func Ramp(ctx context.Context, n, batch int, sources []netip.Addr, errs *tally.Errors, dial func(ctx context.Context, i int, src netip.Addr) error) []Batch {
	var batches []Batch
	for first := 0; first < n && ctx.Err() == nil; first += batch {
		size := min(batch, n-first)
		b := Batch{Connections: size}
		t0 := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := first; i < first+size; i++ {
			var src netip.Addr
			if len(sources) > 0 {
				src = sources[i%len(sources)]
			}
			wg.Go(func() {
				if err := dial(ctx, i, src); err != nil {
					errs.Add(ErrorKind(err), 1, err)
					mu.Lock()
					b.Failed++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		b.Seconds = time.Since(t0).Seconds()
		b.Established = size - b.Failed
		batches = append(batches, b)
	}
	return batches
}

// SourcesVar defines the -sources flag: source addresses, used in turn
// by the connections, into p; more tells what they are for.
func SourcesVar(fs *flag.FlagSet, p *[]netip.Addr, more string) {
	flagset.Value(fs, p, "sources", "source `ADDRESSES` used in turn, one per connection: a range (127.0.0.1-127.0.0.8), a list (127.0.0.1,127.0.0.2) or both"+more+" (default: the kernel's choice)", ParseSources)
}

// maxSources bounds a -sources list.
const maxSources = 4096

// ParseSources reads a comma-separated list of addresses and ranges
// (FIRST-LAST, both of one family, FIRST <= LAST).
func ParseSources(s string) ([]netip.Addr, error) {
	var out []netip.Addr
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		first, last, isRange := strings.Cut(part, "-")
		a, err := netip.ParseAddr(first)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address: want 127.0.0.1-127.0.0.8 or 127.0.0.1,127.0.0.2", part)
		}
		b := a
		if isRange {
			if b, err = netip.ParseAddr(last); err != nil || b.Is4() != a.Is4() || b.Less(a) {
				return nil, fmt.Errorf("%q is not a range: want FIRST-LAST of one family, FIRST <= LAST, such as 127.0.0.1-127.0.0.8", part)
			}
		}
		for ; ; a = a.Next() {
			if len(out) == maxSources {
				return nil, fmt.Errorf("more than %d addresses", maxSources)
			}
			out = append(out, a)
			if a == b {
				break
			}
		}
	}
	return out, nil
}

// EachAtMost runs do on every item, at most n at a time, and returns
// when every one has: the dials and closes of a run, bounded so that a
// burst does not exhaust ports or stall on a stuck connection.
func EachAtMost[T any](items []T, n int, do func(i int, item T)) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, item := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			do(i, item)
		})
	}
	wg.Wait()
}

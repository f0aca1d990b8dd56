// Package progress draws a progress bar for loadgen's ramps and timed
// runs on stderr when it is a terminal, and nothing otherwise: a log file,
// a pipe or a test gets only the notes and the report.
package progress

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar is a progress bar; a nil *Bar draws nothing, so callers need not
// check.
type Bar struct {
	bar  *progressbar.ProgressBar
	stop chan struct{}
	wg   sync.WaitGroup
}

// refresh bounds the redraws: a ramp adds one per connection.
const refresh = 100 * time.Millisecond

// onTerminal reports whether w is a terminal.
func onTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newBar(w io.Writer, max int64, desc string, opts ...progressbar.Option) *Bar {
	if !onTerminal(w) {
		return nil
	}
	opts = append([]progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(refresh),
		progressbar.OptionClearOnFinish(), // the notes and the report follow on a clean line
		progressbar.OptionSetRenderBlankState(true),
	}, opts...)
	return &Bar{bar: progressbar.NewOptions64(max, opts...)}
}

// Count is a bar of n steps (connections dialled, handshakes done), each
// counted with Add.
func Count(w io.Writer, n int, desc string) *Bar {
	return newBar(w, int64(n), desc, progressbar.OptionShowCount())
}

// Timed is a bar that fills over d by itself, for a measured window.
func Timed(w io.Writer, d time.Duration, desc string) *Bar {
	b := newBar(w, d.Milliseconds(), desc, progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(true))
	if b == nil {
		return nil
	}
	b.stop = make(chan struct{})
	start := time.Now()
	b.wg.Go(func() {
		tick := time.NewTicker(refresh)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				_ = b.bar.Set64(min(time.Since(start).Milliseconds(), d.Milliseconds()))
			case <-b.stop:
				return
			}
		}
	})
	return b
}

// Add counts n steps done; safe for concurrent use.
func (b *Bar) Add(n int) {
	if b != nil {
		_ = b.bar.Add(n)
	}
}

// Done removes the bar; call it before writing anything else to w.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	if b.stop != nil {
		close(b.stop)
		b.wg.Wait()
	}
	_ = b.bar.Finish()
}

package wsserver

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// gloop is what one event loop keeps for its connections, touched only on
// that loop: the upgraded connections until they close, which its
// keepalive sweep walks (one sweep per loop every sweepStep, instead of a
// timer per connection: an idle connection costs 8 bytes here where a
// timer and its closure cost 160) and Shutdown drains (instead of a
// registry map of 32 bytes a connection), and what the OnTraffic call
// under way gathers (its connection, the replies, the counts), which no
// idle connection needs to carry.
type gloop struct {
	g    *gnetTarget
	el   gnet.EventLoop
	open []*gconn

	cur    *gconn  // the connection whose call is under way; nil between calls
	out    *[]byte // cur's replies
	rx, tx counts  // messages echoed in the call, for the metrics

	flusher loopFlusher // writes what Enqueue queued (gnetqueue.go)
}

// Loop is one of the gnet engine's event loops (LoopPeer.Loop).
type Loop interface {
	// Execute runs f on the loop, in order with its other work; false:
	// the engine has stopped, and f will not run.
	Execute(f func()) bool
}

// Execute: see Loop. A panic in f is logged, as in every callback.
func (l *gloop) Execute(f func()) bool {
	err := l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		defer func() {
			if v := recover(); v != nil {
				conns.LogPanic(l.g.log, l.g.cfg.Name, v)
			}
		}()
		f()
		return nil
	}))
	return err == nil
}

// loopOf is the gloop of event loop el, made on first sight.
func (g *gnetTarget) loopOf(el gnet.EventLoop) *gloop {
	g.loopsMu.Lock()
	defer g.loopsMu.Unlock()
	for _, l := range g.loops {
		if l.el == el {
			return l
		}
	}
	l := &gloop{g: g, el: el, flusher: loopFlusher{g: g, loop: el}}
	g.loops = append(g.loops, l)
	return l
}

// enter puts an upgraded connection in its loop's list, unless Shutdown
// has begun (false). On the connection's loop.
func (g *gnetTarget) enter(st *gconn) bool {
	if g.listening.Closing() {
		return false
	}
	st.loop.add(st)
	g.active.Add(1)
	return true
}

// leave takes a closed connection out of its loop's list, if it is in it.
func (g *gnetTarget) leave(st *gconn) {
	if st.slot < 0 || st.loop == nil {
		return
	}
	st.loop.remove(st)
	g.active.Add(-1)
}

// onEachLoop runs f on every loop that has had a connection, with its
// list, and returns once each has run or ctx has ended. Shutdown sets
// closing before it calls this: an upgrade that completes on a loop after
// f ran there is refused, so f sees every connection that will enter.
func (g *gnetTarget) onEachLoop(ctx context.Context, f func(l *gloop)) error {
	g.loopsMu.Lock()
	loops := append([]*gloop(nil), g.loops...)
	g.loopsMu.Unlock()
	done := make(chan struct{}, len(loops))
	for _, l := range loops {
		err := l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer func() { done <- struct{}{} }()
			f(l)
			return nil
		}))
		if err != nil {
			done <- struct{}{} // the engine is stopping: nothing runs there any more
		}
	}
	for range loops {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// snapshot is every connection in the loops' lists.
func (g *gnetTarget) snapshot(ctx context.Context) []*gconn {
	var mu sync.Mutex
	var all []*gconn
	_ = g.onEachLoop(ctx, func(l *gloop) {
		mu.Lock()
		all = append(all, l.open...)
		mu.Unlock()
	})
	return all
}

// drain is the shutdown of every upgraded connection, the sequence of
// conns.Drain, on the loops' lists: 1001 to each, a wait for them to go
// for half the time left, then the rest dropped and waited for.
func (g *gnetTarget) drain(ctx context.Context) error {
	return conns.DrainWith(ctx,
		func() error {
			return g.onEachLoop(ctx, func(l *gloop) {
				for _, st := range l.open {
					st.Close(CloseGoingAway)
				}
			})
		},
		g.allGone,
		func() error {
			return g.onEachLoop(ctx, func(l *gloop) {
				for _, st := range slices.Clone(l.open) {
					_ = st.conn.Close()
				}
			})
		})
}

// allGone reports whether no upgraded connection is left before ctx ends.
// It looks every 10 ms: it runs once, at shutdown.
func (g *gnetTarget) allGone(ctx context.Context) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for g.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// add puts an upgraded connection in the list.
func (l *gloop) add(st *gconn) {
	st.slot = int32(len(l.open))
	l.open = append(l.open, st)
}

// remove takes st out of the list, if it is in it.
func (l *gloop) remove(st *gconn) {
	i := int(st.slot)
	if l == nil || i < 0 || i >= len(l.open) || l.open[i] != st {
		return
	}
	last := len(l.open) - 1
	l.open[i] = l.open[last]
	l.open[i].slot = int32(i)
	l.open[last] = nil
	l.open = l.open[:last]
	st.slot = -1
	if cap(l.open) > 64 && len(l.open) < cap(l.open)/4 {
		l.open = append([]*gconn(nil), l.open...) // give back what a crowd left
	}
}

// begin starts a call that may reply on st, and returns the buffer its
// replies gather in; end ends it.
func (l *gloop) begin(st *gconn) *[]byte {
	l.cur, l.out = st, wsframe.GetBuffer()
	return l.out
}

func (l *gloop) end() { l.cur, l.out = nil, nil }

// sweepStep is how often each loop's keepalive sweep runs: an eighth of
// the shorter of -ping-interval and -ping-timeout, between 10 ms and 1 s.
// A connection is pinged or dropped at most that much after its time,
// never before.
func (g *gnetTarget) sweepStep() time.Duration {
	return min(max(min(g.cfg.PingInterval, g.cfg.PingTimeout)/8, 10*time.Millisecond), time.Second)
}

// sweepAll asks each loop to sweep its connections: gnet's ticker calls
// it (OnTick) from its own goroutine.
func (g *gnetTarget) sweepAll() {
	g.loopsMu.Lock()
	loops := append([]*gloop(nil), g.loops...)
	g.loopsMu.Unlock()
	for _, l := range loops {
		_ = l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			g.sweep(l)
			return nil
		}))
	}
}

// sweep runs the keepalive of every open connection of l whose time has
// come. It walks from the end: a connection that closes meanwhile takes
// the place of the last, which has been looked at already.
func (g *gnetTarget) sweep(l *gloop) {
	defer func() {
		if v := recover(); v != nil {
			conns.LogPanic(g.log, g.cfg.Name, v)
		}
	}()
	now := clock()
	for i := len(l.open) - 1; i >= 0; i-- {
		if i >= len(l.open) {
			continue
		}
		if st := l.open[i]; now >= st.due {
			g.keepalive(st, now)
		}
	}
}

package wsserver

import (
	"context"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/shared/conns"
	"github.com/knowngood/knowngood/shared/wsserver/wsframe"
)

// gloop is what one event loop keeps for its connections, touched only on
// that loop: the open connections, which its keepalive sweep walks (one
// sweep per loop every sweepStep, instead of a timer per connection: an
// idle connection costs 8 bytes here where a timer and its closure cost
// 160), and what the OnTraffic call under way gathers (its connection, the
// replies, the counts), which no idle connection needs to carry.
type gloop struct {
	g    *gnetTarget
	el   gnet.EventLoop
	open []*gconn

	cur    *gconn  // the connection whose call is under way; nil between calls
	out    *[]byte // cur's replies
	rx, tx counts  // messages echoed in the call, for the metrics
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
	l := &gloop{g: g, el: el}
	g.loops = append(g.loops, l)
	return l
}

// add puts an upgraded connection in the sweep.
func (l *gloop) add(st *gconn) {
	st.slot = int32(len(l.open))
	l.open = append(l.open, st)
}

// remove takes st out of the sweep, if it is in it.
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
			conns.LogPanic(g.log, g.cfg.Variant, v)
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

package wsserver

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// Connection phases; each gconn moves forward through them only.
const (
	phaseHandshake = iota // reading the upgrade request
	phaseLinger           // refused: the answer is written, the rest is dropped
	phaseOpen             // serving messages
	phaseClosing          // the server sent its close frame, waits for the client's
	// phaseClosed: OnClose has run. gnet closes a connection inside Write
	// when the write fails, so every write is followed by a look at the
	// phase: the descriptor may already belong to another connection.
	phaseClosed
)

// gconn is one connection's state. Only its event loop touches it, except
// conn, loop and rd.Deflate (set before anyone else sees the gconn), and
// shut and queue, which Enqueue reads and sets.
//
// An idle connection is mostly this struct, so what only some connections
// or some moments need lives elsewhere: the upgrade's state until the
// upgrade, the send queue on queued (broadcast) targets, the known-bad
// modes' state once a mode meets a message, and what one OnTraffic call
// gathers (the replies, the counts: its loop's, gloop). The keepalive has
// no timer of its own: its loop's sweep looks at due.
type gconn struct {
	conn    gnet.Conn
	session Session
	loop    *gloop          // the connection's loop (and target), from OnOpen
	hs      *handshakeState // nil once upgraded
	timer   *time.Timer     // the upgrade's clock, then the close wait's; nil when open
	// queue is the send queue of a queued (broadcast) target
	// (Options.Queue), made by the first Enqueue: an idle subscriber that
	// is never sent anything does not carry one (96 bytes).
	queue  atomic.Pointer[sendQueue]
	faults *connFaults // the known-bad modes'; nil until a mode first meets a message
	// due is when the running clock runs out, in clock() time: the
	// upgrade's or the close wait's (timer), or, while open, the
	// keepalive's next look (its loop's sweep).
	due  int64
	skip int64 // bytes of a dropped frame still to come (closing)
	// rd reads the client's frames and holds a message arriving in
	// fragments; rd.Deflate says that permessage-deflate was negotiated.
	rd   wsframe.Reader
	need uint32 // bytes that must be buffered before the next parse (saturated)
	slot int32  // index in loop.open from the upgrade until OnClose; -1 otherwise
	// reason is the disconnect reason once known: a close code, or
	// reasonCodePingTimeout; 0 = none yet (1006 at the end).
	reason int32
	// shut, read by Enqueue from other goroutines: the server has begun to
	// close.
	shut  atomic.Bool
	phase uint8
	// lingering: closing, and the client's frames cannot be read on; what
	// comes is dropped until the client closes (failLost).
	lingering bool
	counted   bool // the handshake's result has been recorded
	held      bool // holds a -max-conns place
	// The keepalive (see httpPeer.keepalive): heard says that something
	// came since the sweep last looked, the sign of life; pinged that the
	// ping is out.
	heard  bool
	pinged bool
	// late: the upgrade's or the close wait's clock ran out while bytes
	// the client had sent waited unread; the next read is their last
	// chance (expire).
	late bool
}

// reasonCodePingTimeout is gconn.reason for a connection dropped by the
// keepalive.
const reasonCodePingTimeout = -1

// disconnectReason is the reason a gconn's disconnect is counted under.
func (st *gconn) disconnectReason() string {
	switch st.reason {
	case 0:
		return reasonAbnormal
	case reasonCodePingTimeout:
		return reasonPingTimeout
	}
	return codeReason(int(st.reason))
}

// setNeed records how many bytes the next parse needs, saturated: a larger
// need only means an earlier look.
func (st *gconn) setNeed(n int) { st.need = uint32(min(max(n, 0), math.MaxUint32)) }

// clockStart is the origin of clock.
var clockStart = time.Now()

// clock is monotonic time in nanoseconds since the process started: 8
// bytes where a time.Time takes 24.
func clock() int64 { return int64(time.Since(clockStart)) }

// delayState is -fault-delay on one gnet connection, its delayer:
// deliveries waiting for their time, in order, and the timer that wakes
// the loop for the first. Only the loop touches it.
type delayState struct {
	st      *gconn
	due     []delayed
	timer   *time.Timer
	stopped bool // the connection has closed
}

// arm (re)starts the connection's timer: when it fires, expire runs on the
// connection's loop.
func (st *gconn) arm(g *gnetTarget, d time.Duration) {
	d = max(d, 0)
	st.due = clock() + int64(d)
	if st.timer != nil {
		st.timer.Reset(d)
		return
	}
	st.timer = time.AfterFunc(d, func() { g.onLoop(st, g.expire) })
}

// onLoop runs f on st's event loop, unless the connection has closed.
func (g *gnetTarget) onLoop(st *gconn, f func(*gconn)) {
	_ = st.conn.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		defer func() {
			if v := recover(); v != nil {
				conns.LogPanic(g.log, g.cfg.Name, v)
			}
		}()
		if st.phase != phaseClosed {
			f(st)
		}
		return nil
	}))
}

// expire closes a connection whose upgrade request did not complete in
// time, or whose client did not answer the server's close in time.
func (g *gnetTarget) expire(st *gconn) {
	if clock() < st.due || st.phase == phaseOpen {
		return // a timer that fired just before being re-armed or stopped
	}
	if st.phase != phaseLinger && !st.late && rawSockets && inputBytes(uintptr(st.conn.Fd())) > 0 {
		// The client's bytes are in, unread: the loop is late, not the
		// client (held up by other connections, or short of CPU).
		// net/http's clock starts when its goroutine first reads, so it
		// would read them, and closing them unread resets the client.
		// They get one read (OnTraffic), then the clock has run out. A
		// refused connection's linger drops what comes: no read for it.
		st.late = true
		return
	}
	if st.phase == phaseHandshake {
		g.headerTimeout(st)
	}
	_ = st.conn.EventLoop().Close(st.conn)
}

// headerTimeout counts an upgrade whose request did not complete in time.
func (g *gnetTarget) headerTimeout(st *gconn) {
	g.m.Timeout(metrics.ListenerTarget, metrics.StageHeader)
	if st.hs.started() && !st.counted {
		st.counted = true
		g.m.Handshake(protocol.ResultFailed, transport, 0)
		g.unserved(true)
	}
}

// keepalive pings a connection that has been quiet for -ping-interval and
// drops it, as ping_timeout, if it stays quiet for -ping-timeout. Its
// loop's sweep calls it once the connection's due time has come (a sweep
// step late at most: never early).
func (g *gnetTarget) keepalive(st *gconn, now int64) {
	if st.phase != phaseOpen || g.opts.NoKeepalive {
		return
	}
	switch {
	case !st.pinged && st.heard:
		st.heard = false
		st.due = now + int64(g.cfg.PingInterval)
	case !st.pinged:
		st.pinged = true
		ping := wsframe.AppendFrame(nil, 0, 0x9, nil)
		if _, _ = st.conn.Write(ping); st.phase == phaseClosed {
			return
		}
		st.due = now + int64(g.cfg.PingTimeout)
	case !st.heard:
		st.reason = reasonCodePingTimeout
		_ = st.conn.EventLoop().Close(st.conn)
	default:
		st.pinged, st.heard = false, false
		st.due = now + int64(g.cfg.PingInterval)
	}
}

// newDelayer makes the connection's delayer, on its first delay.
func (st *gconn) newDelayer() delayer { return &delayState{st: st} }

// after is -fault-delay on gnet: f runs on the loop once d has passed and
// the deliveries before it have run, with the replies it makes written as
// one; the loop never waits.
func (dl *delayState) after(d time.Duration, f func()) {
	dl.due = append(dl.due, delayed{time.Now().Add(d), f})
	if len(dl.due) > 1 {
		return // the timer is set for the first
	}
	if dl.timer == nil {
		g := dl.st.loop.g
		dl.timer = time.AfterFunc(d, func() { g.onLoop(dl.st, func(*gconn) { dl.run() }) })
		return
	}
	dl.timer.Reset(d)
}

// holding: while deliveries wait, a new one waits behind them.
func (dl *delayState) holding() bool { return len(dl.due) > 0 }

// stop drops the deliveries waiting: the connection has closed.
func (dl *delayState) stop() {
	dl.stopped = true
	if dl.timer != nil {
		dl.timer.Stop()
	}
	clear(dl.due)
	dl.due = nil
}

// run, on the loop, runs the deliveries whose time has come, in order,
// and sets the timer for the next.
func (dl *delayState) run() {
	st := dl.st
	if dl.stopped {
		return // closed: OnClose dropped them
	}
	out := st.loop.begin(st)
	now := time.Now()
	i := 0
	for ; i < len(dl.due) && !dl.due[i].due.After(now) && st.phase == phaseOpen; i++ {
		dl.due[i].f()
	}
	st.loop.end()
	if len(*out) > 0 && st.phase != phaseClosed {
		_, _ = st.conn.Write(*out)
	}
	wsframe.PutBuffer(out)
	st.loop.g.flushCounts(st.loop)
	if st.phase != phaseOpen {
		return
	}
	clear(dl.due[:i])
	dl.due = dl.due[i:]
	if len(dl.due) > 0 {
		dl.timer.Reset(time.Until(dl.due[0].due))
	}
}

// Close starts the server's close with code, from any goroutine; what is
// queued is dropped.
func (st *gconn) Close(code int) { st.close(code, false) }

// closeAfterQueue is Close once the queue is written.
func (st *gconn) closeAfterQueue(code int) { st.close(code, true) }

func (st *gconn) close(code int, drain bool) {
	st.shut.Store(true)
	st.loop.g.onLoop(st, func(st *gconn) {
		if drain {
			st.flush()
		}
		if st.phase != phaseOpen {
			return
		}
		out := wsframe.GetBuffer()
		if code == 0 {
			*out = wsframe.AppendHeader(*out, 0, ws.OpClose, 0)
		} else {
			*out = wsframe.AppendClose(*out, code)
		}
		st.closing(st.loop.g, code)
		_, _ = st.conn.Write(*out)
		wsframe.PutBuffer(out)
		if code == 0 && st.phase == phaseClosing {
			// Node's engine.io ends the socket after its close frame:
			// FIN now, and what the client sends is dropped.
			st.lingering = true
			if st.conn.OutboundBuffered() == 0 {
				shutdownWrite(st.conn.Fd())
			}
		}
	})
}

// fail starts the server's close with code: the close frame goes out with
// the other replies, then the connection waits for the client's answer.
func (g *gnetTarget) fail(st *gconn, out *[]byte, code ws.StatusCode) gnet.Action {
	if st.phase != phaseOpen {
		return gnet.Close
	}
	*out = wsframe.AppendClose(*out, int(code))
	st.closing(g, int(code))
	return gnet.None
}

// closing records that the server sent its close frame with code.
func (st *gconn) closing(g *gnetTarget, code int) {
	st.shut.Store(true)
	st.reason = int32(code)
	st.phase = phaseClosing
	st.need = 0
	st.rd.Reset()
	st.arm(g, closeWait)
}

// failLost is fail when the client's frames cannot be read on (its close
// frame was bad, or a length unusable): after the close frame the server
// sends FIN and drops what comes until the client closes or the close wait
// ends.
func (g *gnetTarget) failLost(st *gconn, out *[]byte, code ws.StatusCode) gnet.Action {
	if st.phase != phaseOpen {
		return gnet.Close
	}
	g.fail(st, out, code)
	st.lingering = true
	return gnet.None
}

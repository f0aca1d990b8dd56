package wsserver

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/shared/conns"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wsserver/wsframe"
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
// g, conn, rd.Deflate and queue (set before anyone else sees the gconn) and
// the atomics that Enqueue reads.
//
// An idle connection is mostly this struct, so what only some connections
// or some moments need lives elsewhere: the upgrade's state until the
// upgrade, the send queue on queued (broadcast) targets, -fault-delay's
// state once a delay is made, and a frame's scratch (frameScratch) for the
// length of one call.
type gconn struct {
	g        *gnetTarget
	conn     gnet.Conn
	session  Session
	phase    int
	hs       *handshakeState // nil once upgraded
	timer    *time.Timer
	deadline time.Time // of the handshake or of the close wait
	sent     int       // close code the server sent; 0 = none
	reason   string    // disconnect reason once known

	need int   // bytes that must be buffered before the next parse
	skip int64 // bytes of a dropped frame still to come (closing)
	// lingering: closing, and the client's frames cannot be read on; what
	// comes is dropped until the client closes (failLost).
	lingering bool
	counted   bool // the handshake's result has been recorded
	held      bool // holds a -max-conns place
	pinged    bool // the keepalive's ping is out
	// shut, read by Enqueue from other goroutines: the server has begun to
	// close. Beside the flags above, it takes no word of its own.
	shut atomic.Bool

	// rd reads the client's frames and holds a message arriving in
	// fragments; rd.Deflate says that permessage-deflate was negotiated.
	rd wsframe.Reader

	out *[]byte // the replies of the OnTraffic call under way; nil between calls

	queue *sendQueue // nil unless the target queues (Options.Queue)
	// outbound, read by Enqueue from other goroutines: the bytes gnet holds
	// for a client that does not read.
	outbound atomic.Int64

	rx, tx counts // echoed in the current frames call, for the metrics

	// The keepalive (see httpPeer.keepalive): reads counts OnTraffic
	// calls, the sign of life; pingMark is its value when the ping went.
	ka       *time.Timer
	reads    uint32
	pingMark uint32

	delay *delayState // -fault-delay; nil until the first delay
}

// delayState is -fault-delay on one connection: messages waiting for
// their time, in order, and the timer that wakes the loop for the first.
type delayState struct {
	due   []delayed
	timer *time.Timer
}

// arm (re)starts the connection's timer: when it fires, expire runs on the
// connection's loop.
func (st *gconn) arm(g *gnetTarget, d time.Duration) {
	d = max(d, 0)
	st.deadline = time.Now().Add(d)
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
				conns.LogPanic(g.log, g.cfg.Variant, v)
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
	if time.Now().Before(st.deadline) || st.phase == phaseOpen {
		return // a timer that fired just before being re-armed or stopped
	}
	if st.phase == phaseHandshake {
		g.m.Timeout(metrics.ListenerTarget, metrics.StageHeader)
		if !st.hs.first.IsZero() && !st.counted {
			st.counted = true
			g.m.Handshake(protocol.ResultFailed, transport, 0)
		}
	}
	_ = st.conn.EventLoop().Close(st.conn)
}

// keepalive pings a connection that has been quiet for -ping-interval and
// drops it, as ping_timeout, if it stays quiet for -ping-timeout.
func (g *gnetTarget) keepalive(st *gconn) {
	if st.phase != phaseOpen {
		return
	}
	switch {
	case !st.pinged && st.reads != st.pingMark:
		st.pingMark = st.reads
		st.ka.Reset(g.cfg.PingInterval)
	case !st.pinged:
		st.pinged = true
		st.pingMark = st.reads
		ping := wsframe.AppendFrame(nil, 0, 0x9, nil)
		if _, _ = st.conn.Write(ping); st.phase == phaseClosed {
			return
		}
		st.ka.Reset(g.cfg.PingTimeout)
	case st.reads == st.pingMark:
		st.reason = reasonPingTimeout
		_ = st.conn.EventLoop().Close(st.conn)
	default:
		st.pinged = false
		st.pingMark = st.reads
		st.ka.Reset(g.cfg.PingInterval)
	}
}

// after is -fault-delay on gnet: f runs on the loop once d has passed, in
// order, with the replies it makes written as one; the loop never waits.
func (st *gconn) after(d time.Duration, f func()) {
	if st.delay == nil {
		st.delay = &delayState{}
	}
	dl := st.delay
	dl.due = append(dl.due, delayed{time.Now().Add(d), f})
	if len(dl.due) > 1 {
		return // the timer is set for the first
	}
	if dl.timer == nil {
		dl.timer = time.AfterFunc(d, func() { st.g.onLoop(st, st.g.runDelayed) })
		return
	}
	dl.timer.Reset(d)
}

func (g *gnetTarget) runDelayed(st *gconn) {
	dl := st.delay
	if dl == nil {
		return // closed: OnClose dropped them
	}
	out := wsframe.GetBuffer()
	defer wsframe.PutBuffer(out)
	st.out = out
	now := time.Now()
	i := 0
	for ; i < len(dl.due) && !dl.due[i].due.After(now) && st.phase == phaseOpen; i++ {
		dl.due[i].f()
	}
	st.out = nil
	if len(*out) > 0 && st.phase != phaseClosed {
		_, _ = st.conn.Write(*out)
	}
	g.flushCounts(st)
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
	st.g.onLoop(st, func(st *gconn) {
		if drain {
			st.flush()
		}
		if st.phase != phaseOpen {
			return
		}
		out := wsframe.GetBuffer()
		*out = wsframe.AppendClose(*out, code)
		st.closing(st.g, code)
		_, _ = st.conn.Write(*out)
		wsframe.PutBuffer(out)
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
	st.sent = code
	st.reason = codeReason(code)
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

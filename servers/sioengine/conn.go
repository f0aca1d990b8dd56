package sioengine

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// Session states.
const (
	stateOpen = iota
	stateClosing
	stateClosed
)

// maxQueued bounds the frames a session holds for a client that does not
// read them; past it the session is closed ("transport error"), where
// Node's engine.io would buffer without end.
const maxQueued = 4096

// raceWait bounds how long a request waits for one the client sent before
// it on another connection (see servePoll and servePost). Node's engine.io
// checks an upgrading session's long-poll every 100 ms; no client waits
// longer than that here.
const raceWait = 100 * time.Millisecond

// writeWait bounds one batch of WebSocket writes (what the writer took
// from the queue at once) to a client that does not read.
const writeWait = 10 * time.Second

// Conn is one Engine.IO session. Its fields are guarded by mu; at most one
// goroutine writes to its transport at a time (the WebSocket writer, or
// the long-poll GET that takes the queue).
type Conn struct {
	srv  *Server
	id   string
	eio3 bool // an Engine.IO v3 / Socket.IO v2 session (Options.AllowEIO3)
	// Data is the application's, set in Hooks.Opened.
	Data any

	mu        sync.Mutex
	state     int
	transport string
	queue     []*frame
	reason    string // why the session is closing or closed
	byServer  bool   // the server began the close

	poll    chan struct{} // a pending GET waits on it; nil when none
	posting bool          // a POST is being read

	ws      wsConn
	writing bool // the WebSocket writer is running

	upgrading   bool
	probed      bool
	upgradeDone chan struct{} // closed when an upgrade ends, either way
	probe       wsConn        // the WebSocket of an upgrade under way

	timers    timerSource // runtime timers, or its gnet loop's wheel
	heartbeat sessionTimer
	awaitPong bool
	// expires is when the heartbeat ends the session unless the client
	// answers first (v4: a pong; v3: a ping), on the schedule: the open
	// or the last answer, plus pingInterval and pingTimeout. pingSent is
	// when the ping awaiting its pong went out, and pingSeen whether it
	// reached the client then (a WebSocket, or a long-poll pending).
	// See expired.
	expires    time.Time
	pingSent   time.Time
	pingSeen   bool
	connectTmr sessionTimer
	connectBy  time.Time // when the connect timeout is due

	sockets  map[string]*Socket // by namespace
	pending  int                // CONNECTs in the middleware
	ackedAt  time.Time          // when the first CONNECT ack was queued; zero before
	partial  *partialPacket     // a binary packet waiting for attachments
	closedCh chan struct{}
}

func newConn(s *Server, transport string, timers timerSource) *Conn {
	return &Conn{srv: s, id: newID(), transport: transport, timers: timers, closedCh: make(chan struct{})}
}

// ID is the session id (sid).
func (c *Conn) ID() string { return c.id }

// Transport is the session's transport now.
func (c *Conn) Transport() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transport
}

// ServerClosed reports whether the server began the session's close (the
// connect timeout, a parse error, shutdown) rather than the client.
func (c *Conn) ServerClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byServer
}

// AckedAt is when the session's first CONNECT ack was queued, zero if
// none was. On gnet the ack is written at once, under the session's lock,
// so a client may read it and close before the Connected hook runs: a
// Closed hook that sees AckedAt set knows the handshake was completed.
func (c *Conn) AckedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ackedAt
}

// start arms the heartbeat and the connect timeout. On gnet they are
// timers of the loop's wheel (timers.go): they fire on the loop, at most
// one tick (an eighth of the shortest timeout, 10 ms to 1 s) after their
// time, never before.
func (c *Conn) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.expires = now.Add(c.srv.opts.PingInterval + c.srv.opts.PingTimeout)
	c.connectBy = now.Add(c.srv.opts.ConnectTimeout)
	if c.eio3 {
		// The v3 client pings; the session ends when no ping has come
		// for pingInterval + pingTimeout.
		c.heartbeat = c.timers.afterFunc(c.v3Deadline(), func() { c.terminate("ping timeout") })
	} else {
		c.heartbeat = c.timers.afterFunc(c.srv.opts.PingInterval, c.beat)
	}
	c.connectTmr = c.timers.afterFunc(c.srv.opts.ConnectTimeout, func() {
		c.mu.Lock()
		joined := !c.ackedAt.IsZero()
		c.mu.Unlock()
		if !joined {
			c.Close()
		}
	})
}

// beat is the heartbeat timer: a ping every pingInterval, and a session
// whose pong has not come pingTimeout after it is closed. A closing
// session sends no ping but still times out, as in Node: a polling
// session whose client never comes back for the close packet ends
// within pingInterval + pingTimeout of its close.
//
// A session past its connect timeout without a namespace is closed first,
// as that timer, due first, would have done: on a loaded process the two
// timers' functions may run in either order, where Node's run in due
// order. The heartbeat goes on after it unless the close is delivered now
// (a WebSocket, a long-poll pending): with the two due together (the
// defaults: 25 s + 20 s and 45 s), stopping here would leave a polling
// session whose client has gone closing for ever.
func (c *Conn) beat() {
	c.mu.Lock()
	if c.state == stateClosed {
		c.mu.Unlock()
		return
	}
	if c.state == stateOpen && c.ackedAt.IsZero() && !time.Now().Before(c.connectBy) {
		delivered := c.transport == WebSocket || c.poll != nil
		c.beginCloseLocked("forced close", true)
		if delivered {
			c.mu.Unlock()
			return
		}
	}
	if c.awaitPong {
		c.mu.Unlock()
		c.terminate("ping timeout")
		return
	}
	c.awaitPong = true
	if c.state == stateOpen {
		c.pingSent = time.Now()
		c.pingSeen = c.transport == WebSocket || c.poll != nil
		c.enqueueLocked(pingFrame)
	}
	c.heartbeat.Reset(c.srv.opts.PingTimeout)
	c.mu.Unlock()
}

// pong: the client answered; the next ping is pingInterval away.
func (c *Conn) pong() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.awaitPong && c.state != stateClosed {
		c.awaitPong = false
		c.heartbeat.Reset(c.srv.opts.PingInterval)
		c.expires = time.Now().Add(c.srv.opts.PingInterval + c.srv.opts.PingTimeout)
	}
}

// expired reports whether a request finds the session gone: closed
// (terminate marks it so before it leaves the session map, and on Node a
// closed session is gone at once), or its heartbeat's time up, its timer
// run or not, as on Node, whose timers run on time (a loaded process's
// may not). A ping
// that reached the client when it went out has pingTimeout from then, as
// in Node, so that a client is not blamed for a ping sent late. One that
// did not (no long-poll pending) is due on the schedule: the client could
// not see it before its next request, and on Node it would have been
// sent, unseen, on time.
func (c *Conn) expired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	switch {
	case c.state == stateClosed:
		return true
	case c.eio3:
	case c.awaitPong && c.pingSeen:
		return !now.Before(c.pingSent.Add(c.srv.opts.PingTimeout))
	case !c.awaitPong && (c.transport == WebSocket || c.poll != nil):
		return false // its ping, when sent, reaches it at once
	}
	return !now.Before(c.expires)
}

func (c *Conn) v3Deadline() time.Duration {
	return c.srv.opts.PingInterval + c.srv.opts.PingTimeout
}

// pingV3: a v3 client's ping gets a pong (without the ping's data, as
// from Node's engine.io), and the deadline starts again.
func (c *Conn) pingV3() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != stateOpen {
		return
	}
	c.heartbeat.Reset(c.v3Deadline())
	c.expires = time.Now().Add(c.v3Deadline())
	c.enqueueLocked(pongFrame)
}

// send queues frames to go out together, in order.
func (c *Conn) send(frames ...*frame) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != stateOpen {
		for _, f := range frames {
			f.release()
		}
		return false
	}
	for i, f := range frames {
		if !c.appendLocked(f) {
			for _, rest := range frames[i+1:] {
				rest.release()
			}
			return false
		}
	}
	c.kickLocked()
	return true
}

// enqueueLocked queues a frame and wakes the one who writes it.
func (c *Conn) enqueueLocked(f *frame) {
	if c.appendLocked(f) {
		c.kickLocked()
	}
}

// appendLocked queues a frame; false: the queue was full, and the
// session is closing.
func (c *Conn) appendLocked(f *frame) bool {
	if len(c.queue) >= maxQueued {
		f.release()
		c.beginCloseLocked("transport error", true)
		return false
	}
	c.queue = append(c.queue, f)
	if n := f.payloadBytes(); n > 0 && c.srv.opts.Hooks.Sent != nil {
		c.srv.opts.Hooks.Sent(c, n)
	}
	return true
}

// kickLocked wakes the writer of the current transport. A WebSocket
// whose writes never block (gnet's) is written to here, under the lock
// that orders the session's frames: one hand-over to the loop's flusher
// per send, no task on the loop per session. Only the close, which
// ends the session once the queue is out, runs as a task of the loop.
func (c *Conn) kickLocked() {
	switch {
	case c.transport == WebSocket && c.ws != nil && !c.writing:
		ws := c.ws
		if ws.nonBlocking() && c.state == stateOpen {
			if err := ws.writeFrames(c.takeLocked()); err != nil {
				ws.drop() // the reader ends the session
			}
			return
		}
		c.writing = true
		ws.startWriter(func() { c.writeWebSocket(ws) })
	case c.transport == Polling && c.poll != nil:
		close(c.poll)
		c.poll = nil
	}
}

// Close closes the session from the server's side ("forced close"), once
// what is queued has been written.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beginCloseLocked("forced close", true)
}

// discard closes the session for a shutdown: as Close, but a polling
// session with nothing left to write and no long-poll to write it to ends
// at once (an upgrade under way with it), as Node's engine.io discards it
// when it closes: its client has read everything, and may never poll
// again.
func (c *Conn) discard() {
	c.mu.Lock()
	c.beginCloseLocked("forced close", true)
	idle := c.state == stateClosing && c.transport == Polling && c.poll == nil && len(c.queue) == 0 && !c.posting
	c.mu.Unlock()
	if idle {
		c.terminate("forced close")
	}
}

// beginCloseLocked starts an orderly close: the writer finishes it after
// the queue (a WebSocket), or the next long-poll does (polling), which
// gets the close packet.
func (c *Conn) beginCloseLocked(reason string, byServer bool) {
	if c.state != stateOpen {
		return
	}
	c.state, c.reason, c.byServer = stateClosing, reason, byServer
	c.kickLocked()
}

// terminate ends the session now with reason; the first call counts.
func (c *Conn) terminate(reason string) {
	c.mu.Lock()
	if c.state == stateClosed {
		c.mu.Unlock()
		return
	}
	if !clientReason(reason) {
		c.byServer = true
	}
	c.state, c.reason = stateClosed, reason
	c.heartbeat.Stop()
	c.connectTmr.Stop()
	if c.poll != nil {
		close(c.poll)
		c.poll = nil
	}
	queue := c.queue
	c.queue = nil
	ws := c.ws
	sockets := c.sockets
	c.sockets = nil
	c.partial = nil
	if c.upgradeDone != nil && c.upgrading {
		c.upgrading = false
		close(c.upgradeDone)
	}
	// An upgrade under way ends with the session, as on Node, whose
	// socket closes the probing transport when it closes.
	probe := c.probe
	c.probe = nil
	c.mu.Unlock()
	for _, f := range queue {
		f.release()
	}
	if ws != nil {
		ws.closeQuietly()
	}
	if probe != nil {
		probe.closeQuietly()
	}
	c.srv.conns.Delete(c.id)
	for _, s := range sockets {
		if r := s.nsp.rec; r != nil && s.pid != "" && recoverable(reason) {
			r.save(s, s.nsp.joined(s))
		}
		if h := c.srv.opts.Hooks.Disconnected; h != nil {
			h(s, reason)
		}
		s.nsp.remove(s)
	}
	close(c.closedCh)
	c.srv.count.Add(-1)
	if h := c.srv.opts.Hooks.Closed; h != nil {
		h(c, reason)
	}
}

// Unwritten is how many frames the session holds for its client and has
// not written: its queue, and on gnet what its loop and gnet hold (the
// bytes gnet holds counted as frames of 1 KiB). A client that does not
// read makes it grow, up to the bounds that then end the session.
func (c *Conn) Unwritten() int {
	c.mu.Lock()
	n, ws := len(c.queue), c.ws
	c.mu.Unlock()
	if ws != nil {
		n += ws.unwritten()
	}
	return n
}

// Sockets returns the session's sockets, one per namespace it joined.
func (c *Conn) Sockets() []*Socket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Values(c.sockets))
}

// takeLocked takes what is queued.
func (c *Conn) takeLocked() []*frame {
	q := c.queue
	c.queue = nil
	return q
}

// clientReason reports whether a close reason puts the end on the client:
// it left, its transport failed, or it stopped answering pings.
func clientReason(reason string) bool {
	switch reason {
	case "transport close", "transport error", "ping timeout":
		return true
	}
	return false
}

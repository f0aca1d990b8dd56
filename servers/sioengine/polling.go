package sioengine

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
)

// openPolling answers an open request over polling: the open packet.
func (s *Server) openPolling(w http.ResponseWriter, r *http.Request) {
	c := s.register(r, Polling, runtimeTimers{})
	open := &frame{data: s.openPacket(c.id, true)}
	writePayload(w, []*frame{open}, c.eio3)
	c.greet()
}

// writePayload answers a long-poll with frames, Node's way.
func writePayload(w http.ResponseWriter, frames []*frame, eio3 bool) {
	appendFrame := appendPayload
	if eio3 {
		appendFrame = appendPayloadV3
	}
	buf := getBuffer()
	for _, f := range frames {
		*buf = appendFrame(*buf, f)
		f.release()
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=UTF-8")
	h.Set("Content-Length", strconv.Itoa(len(*buf)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(*buf)
	putBuffer(buf)
}

// servePoll serves a long-poll GET: it gets what is queued, or waits for
// something to be.
func (c *Conn) servePoll(w http.ResponseWriter, r *http.Request) {
	c.waitUpgrade()
	c.mu.Lock()
	if !c.admitLocked(w, r, c.poll != nil) {
		return
	}
	if len(c.queue) == 0 && c.state == stateOpen && !c.probed {
		wake := make(chan struct{})
		c.poll = wake
		c.mu.Unlock()
		select {
		case <-wake:
		case <-r.Context().Done():
			// Node: "poll connection closed prematurely".
			c.terminate("transport error")
			return
		}
		c.mu.Lock()
	}
	frames := c.pollAnswerLocked()
	c.mu.Unlock()
	writePayload(w, frames, c.eio3)
}

// pollAnswerLocked is what a long-poll takes: the queue, and a noop or the
// close packet when the session or the transport is ending.
func (c *Conn) pollAnswerLocked() []*frame {
	if c.transport == WebSocket {
		// Upgraded meanwhile: the queue is the WebSocket's now, and the
		// old transport ends with the close packet.
		return []*frame{closeFrame}
	}
	frames := c.takeLocked()
	switch {
	case c.state == stateClosing:
		// The server's close: the close packet, after what was queued.
		frames = append(frames, closeFrame)
		c.mu.Unlock()
		c.terminate(c.reason)
		c.mu.Lock()
	case c.state == stateClosed:
		frames = append(frames, noopFrame) // the client's close
	case len(frames) == 0:
		frames = append(frames, noopFrame) // an upgrade is under way
	}
	return frames
}

// waitUpgrade: a GET that arrives while an upgrade is under way waits for
// it (at most raceWait). The client may have sent the upgrade packet
// before this GET over its WebSocket; Node, reading both in arrival order,
// then answers the GET 400.
func (c *Conn) waitUpgrade() {
	c.mu.Lock()
	done := c.upgradeDone
	upgrading := c.upgrading
	c.mu.Unlock()
	if !upgrading {
		return
	}
	t := time.NewTimer(raceWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// admitLocked, called with c.mu held, says whether a polling request may
// go on. It refuses with 400, releasing c.mu, a request on a session no
// longer on polling, and one that overlaps another of its kind in flight
// (busy), which also ends the session, as Node's "overlap from client"
// does.
func (c *Conn) admitLocked(w http.ResponseWriter, r *http.Request, busy bool) bool {
	if c.transport == Polling && !busy {
		return true
	}
	overlap := c.transport == Polling
	c.mu.Unlock()
	refuse(w, r, codeBadRequest, "")
	if overlap {
		c.terminate("transport error")
	}
	return false
}

// servePost reads a POST's packets.
func (c *Conn) servePost(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	if !c.admitLocked(w, r, c.posting) {
		return
	}
	c.posting = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.posting = false
		c.mu.Unlock()
	}()
	max := c.srv.opts.MaxPayload
	if r.ContentLength > max {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	limit := max // one byte more than allowed shows a body too long
	if limit < math.MaxInt64 {
		limit++
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit))
	switch {
	case int64(len(body)) > max:
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		c.terminate("transport error")
		return
	case r.Header.Get("Content-Type") == "application/octet-stream":
		// Engine.IO v4 carries binary as base64 in text; v3's binary
		// payload is not read here (a client that asks for base64, as
		// socket.io-client 2 on Node does, never sends one).
		refuse(w, r, codeBadRequest, "")
		c.terminate("transport error")
		return
	}
	if body == nil {
		body = []byte{}
	}
	if !c.readPayload(body) {
		w.Header().Set("Connection", "close")
		refuse(w, r, codeBadRequest, "")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html")
	h.Set("Content-Length", "2")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("ok"))
}

// readPayload handles a POSTed payload's packets in order; false when
// the server closed the session because of them.
func (c *Conn) readPayload(body []byte) bool {
	wasOpen := c.isOpen()
	decode := decodePayload
	if c.eio3 {
		decode = decodePayloadV3
	}
	err := decode(body, func(p inPacket) bool {
		if p.typ == eioClose {
			c.closeAfterPoll()
			c.terminate("transport close")
			return false
		}
		c.onPacket(p)
		return c.isOpen()
	})
	if errors.Is(err, errParse) {
		c.terminate("parse error")
	}
	return !wasOpen || !c.closedByServer()
}

// closeAfterPoll: a client with a long-poll outstanding that POSTs a close
// packet gets a noop on the GET from Node. The GET and the POST race here
// (two connections); the close waits, at most raceWait, for the GET.
func (c *Conn) closeAfterPoll() {
	for end := time.Now().Add(raceWait); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		c.mu.Lock()
		ready := c.poll != nil || c.state != stateOpen || c.transport != Polling
		c.mu.Unlock()
		if ready {
			return
		}
	}
}

// Open reports whether the session is open (not closing or closed).
func (c *Conn) Open() bool { return c.isOpen() }

func (c *Conn) isOpen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == stateOpen
}

// closedByServer reports whether the server has closed the session or
// begun to.
func (c *Conn) closedByServer() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state != stateOpen && c.byServer
}

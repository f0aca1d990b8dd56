package sioengine

import (
	"errors"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// upgradeTimeout bounds an upgrade from polling: a WebSocket that has not
// sent its upgrade packet by then is closed (Node: upgradeTimeout).
const upgradeTimeout = 10 * time.Second

// accept upgrades the request; on failure gorilla has answered it.
func (s *Server) accept(w http.ResponseWriter, r *http.Request) *websocket.Conn {
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil
	}
	ws.SetReadLimit(s.opts.MaxPayload)
	return ws
}

// openWebSocket opens a session over WebSocket: the open packet is its
// first frame.
func (s *Server) openWebSocket(w http.ResponseWriter, r *http.Request) {
	if up, onLoop := w.(wsserver.LoopUpgrader); onLoop {
		s.openOnLoop(up, r)
		return
	}
	ws := s.accept(w, r)
	if ws == nil {
		return
	}
	gws := &gorillaWS{ws}
	c := s.attach(r, gws, runtimeTimers{})
	go readWebSocket(c, gws, false)
}

// attach makes the session of a WebSocket open request: the open packet
// is its first frame.
func (s *Server) attach(r *http.Request, ws wsConn, timers timerSource) *Conn {
	c := s.register(r, WebSocket, timers)
	c.mu.Lock()
	c.ws = ws
	c.queue = append([]*frame{{data: s.openPacket(c.id, false)}}, c.queue...)
	c.kickLocked()
	c.mu.Unlock()
	c.greet()
	return c
}

// upgradeTo serves a WebSocket that names a polling session: the probe,
// then the upgrade packet, move the session onto it.
func (c *Conn) upgradeTo(w http.ResponseWriter, r *http.Request) {
	if up, onLoop := w.(wsserver.LoopUpgrader); onLoop {
		// No polling session lives on the loops: Node accepts the
		// WebSocket and closes it.
		up.UpgradeOnLoop(closeAtOnce)
		return
	}
	// Marked upgrading before the 101 goes out: a GET the client sends
	// after it then waits for the upgrade (waitUpgrade).
	c.mu.Lock()
	ok := c.transport == Polling && !c.upgrading && c.state == stateOpen
	if ok {
		c.upgrading, c.probed = true, false
		c.upgradeDone = make(chan struct{})
	}
	c.mu.Unlock()
	conn := c.srv.accept(w, r)
	if conn == nil {
		if ok {
			c.abandonUpgrade(nil)
		}
		return
	}
	ws := &gorillaWS{conn}
	if ok {
		c.mu.Lock()
		if ok = c.upgrading && c.state != stateClosed; ok {
			c.probe = ws
		}
		c.mu.Unlock()
	}
	if !ok {
		// Node accepts the WebSocket and closes it (also when the session
		// ended while the 101 went out).
		ws.closeQuietly()
		return
	}
	timer := time.AfterFunc(upgradeTimeout, func() { c.abandonUpgrade(ws) })
	go func() {
		readWebSocket(c, ws, true)
		timer.Stop()
	}()
}

// abandonUpgrade ends an upgrade that did not complete; the session goes
// on over polling.
func (c *Conn) abandonUpgrade(ws wsConn) {
	c.mu.Lock()
	if (ws != nil && c.ws == ws) || !c.upgrading {
		c.mu.Unlock()
		return
	}
	c.upgrading, c.probed, c.probe = false, false, nil
	close(c.upgradeDone)
	c.mu.Unlock()
	if ws != nil {
		ws.closeQuietly()
	}
}

// onUpgradePacket handles a packet of a WebSocket that is not yet the
// session's transport; false ends that WebSocket.
func (c *Conn) onUpgradePacket(ws wsConn, p inPacket) bool {
	switch {
	case p.typ == eioPing && string(p.data) == "probe":
		if ws.writeText([]byte("3probe")) != nil {
			return false
		}
		c.mu.Lock()
		c.probed = true
		if c.poll != nil {
			// Node sends a pending long-poll a noop, so that the client
			// can pause polling.
			close(c.poll)
			c.poll = nil
		}
		c.mu.Unlock()
		return true
	case p.typ == eioUpgrade:
		c.mu.Lock()
		if !c.upgrading || c.state == stateClosed {
			c.mu.Unlock()
			return false
		}
		c.upgrading, c.probed, c.probe = false, false, nil
		c.transport, c.ws = WebSocket, ws
		close(c.upgradeDone)
		if c.poll != nil {
			close(c.poll) // gets the close packet: the old transport ends
			c.poll = nil
		}
		c.writing = true
		ws.startWriter(func() { c.writeWebSocket(ws) })
		c.mu.Unlock()
		if h := c.srv.opts.Hooks.Upgraded; h != nil {
			h(c)
		}
		return true
	}
	c.abandonUpgrade(ws)
	return false
}

// readWebSocket reads a gorilla WebSocket's messages until it ends.
func readWebSocket(c *Conn, gws *gorillaWS, upgrading bool) {
	ws := gws.Conn
	for {
		op, rd, err := ws.NextReader()
		if err != nil {
			c.webSocketEnded(gws, err)
			return
		}
		buf := wsframe.GetBuffer()
		if err := wsframe.ReadMessage(rd, buf, c.srv.opts.MaxPayload); err != nil {
			wsframe.PutBuffer(buf)
			c.webSocketEnded(gws, err)
			return
		}
		if op == websocket.TextMessage && !utf8.Valid(*buf) {
			// Node's ws refuses it (gorilla does not check): 1007.
			wsframe.PutBuffer(buf)
			c.failWebSocket(gws, websocket.CloseInvalidFramePayloadData)
			return
		}
		more := c.onWebSocketMessage(gws, upgrading, op == websocket.TextMessage, *buf)
		wsframe.PutBuffer(buf)
		if !more {
			// An upgrade that failed: nothing reads this WebSocket again.
			gws.closeQuietly()
			return
		}
	}
}

// onWebSocketMessage handles one whole message of a WebSocket, valid only during
// the call; false: that WebSocket is done with (an upgrade that failed).
func (c *Conn) onWebSocketMessage(ws wsConn, upgrading, text bool, data []byte) bool {
	p, err := inPacket{typ: eioMessage, data: data, binary: true}, error(nil)
	if text {
		p, err = parseText(data)
	}
	switch {
	case upgrading && !c.isTransport(ws):
		return c.onUpgradePacket(ws, p)
	case err != nil:
		c.terminate("parse error")
	case p.typ == eioClose:
		c.terminate("transport close")
	default:
		c.onPacket(p)
	}
	return true
}

func (c *Conn) isTransport(ws wsConn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws == ws
}

// webSocketEnded: the client closed (a close frame or the TCP
// connection), or the WebSocket failed (a message over maxPayload).
func (c *Conn) webSocketEnded(ws *gorillaWS, err error) {
	if !c.isTransport(ws) {
		c.abandonUpgrade(ws)
		_ = ws.Close()
		return
	}
	if errors.Is(err, websocket.ErrReadLimit) || errors.Is(err, wsframe.ErrTooBig) {
		c.failWebSocket(ws, websocket.CloseMessageTooBig)
		return
	}
	c.terminate("transport close")
}

// failWebSocket closes a WebSocket that broke the rules with code, as
// Node's ws does, and ends its session or its upgrade ("transport error").
func (c *Conn) failWebSocket(ws *gorillaWS, code int) {
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
	if !c.isTransport(ws) {
		c.abandonUpgrade(ws)
		_ = ws.Close()
		return
	}
	c.terminate("transport error")
}

// writeWebSocket is the session's one WebSocket writer: it runs while
// frames are queued and ends when the queue is empty, so an idle session
// holds no goroutine for writing (on gnet it runs on the connection's
// loop). After a server's close it writes the queue, then the close frame.
func (c *Conn) writeWebSocket(ws wsConn) {
	for {
		c.mu.Lock()
		frames := c.takeLocked()
		if len(frames) == 0 {
			c.writing = false
			closing := c.state == stateClosing
			reason := c.reason
			c.mu.Unlock()
			if closing {
				// Ended first, so that the client's answer to the close
				// frame cannot end it with another reason.
				c.terminate(reason)
			}
			return
		}
		c.mu.Unlock()
		if err := ws.writeFrames(frames); err != nil {
			ws.drop() // the reader ends the session
			c.mu.Lock()
			c.writing = false
			c.mu.Unlock()
			return
		}
	}
}

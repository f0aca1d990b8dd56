package sioengine

import (
	"errors"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/shared/wsserver/wsframe"
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
	ws := s.accept(w, r)
	if ws == nil {
		return
	}
	c := s.register(r, WebSocket)
	c.mu.Lock()
	c.ws = ws
	c.queue = append([]*frame{{data: s.openPacket(c.id, false)}}, c.queue...)
	c.kickLocked()
	c.mu.Unlock()
	go c.readWebSocket(ws, false)
}

// upgradeTo serves a WebSocket that names a polling session: the probe,
// then the upgrade packet, move the session onto it.
func (c *Conn) upgradeTo(w http.ResponseWriter, r *http.Request) {
	// Marked upgrading before the 101 goes out: a GET the client sends
	// after it then waits for the upgrade (waitUpgrade).
	c.mu.Lock()
	ok := c.transport == Polling && !c.upgrading && c.state == stateOpen
	var ws *websocket.Conn
	if ok {
		c.upgrading, c.probed = true, false
		c.upgradeDone = make(chan struct{})
	}
	c.mu.Unlock()
	if ws = c.srv.accept(w, r); ws == nil {
		if ok {
			c.abandonUpgrade(nil)
		}
		return
	}
	if !ok {
		// Node accepts the WebSocket and closes it.
		closeWebSocket(ws)
		return
	}
	timer := time.AfterFunc(upgradeTimeout, func() { c.abandonUpgrade(ws) })
	go func() {
		c.readWebSocket(ws, true)
		timer.Stop()
	}()
}

// closeWebSocket ends a WebSocket as Node's ws close() does: a close
// frame without a status code (the client sees 1005), then the TCP
// connection.
func closeWebSocket(ws *websocket.Conn) {
	_ = ws.WriteControl(websocket.CloseMessage, []byte{}, time.Now().Add(time.Second))
	_ = ws.Close()
}

// abandonUpgrade ends an upgrade that did not complete; the session goes
// on over polling.
func (c *Conn) abandonUpgrade(ws *websocket.Conn) {
	c.mu.Lock()
	if (ws != nil && c.ws == ws) || !c.upgrading {
		c.mu.Unlock()
		return
	}
	c.upgrading, c.probed = false, false
	close(c.upgradeDone)
	c.mu.Unlock()
	if ws != nil {
		closeWebSocket(ws)
	}
}

// onUpgradePacket handles a packet of a WebSocket that is not yet the
// session's transport; false ends that WebSocket.
func (c *Conn) onUpgradePacket(ws *websocket.Conn, p inPacket) bool {
	switch {
	case p.typ == eioPing && string(p.data) == "probe":
		if ws.WriteMessage(websocket.TextMessage, []byte("3probe")) != nil {
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
		c.upgrading, c.probed = false, false
		c.transport, c.ws = WebSocket, ws
		close(c.upgradeDone)
		if c.poll != nil {
			close(c.poll) // gets the close packet: the old transport ends
			c.poll = nil
		}
		c.writing = true
		go c.writeWebSocket(ws)
		c.mu.Unlock()
		return true
	}
	c.abandonUpgrade(ws)
	return false
}

// readWebSocket reads a WebSocket's messages until it ends.
func (c *Conn) readWebSocket(ws *websocket.Conn, upgrading bool) {
	for {
		op, rd, err := ws.NextReader()
		if err != nil {
			c.webSocketEnded(ws, err)
			return
		}
		buf := wsframe.GetBuffer()
		if err := wsframe.ReadMessage(rd, buf, c.srv.opts.MaxPayload); err != nil {
			wsframe.PutBuffer(buf)
			c.webSocketEnded(ws, err)
			return
		}
		if op == websocket.TextMessage && !utf8.Valid(*buf) {
			// Node's ws refuses it (gorilla does not check): 1007.
			wsframe.PutBuffer(buf)
			c.failWebSocket(ws, websocket.CloseInvalidFramePayloadData)
			return
		}
		p := inPacket{typ: eioMessage, data: *buf, binary: true}
		if op == websocket.TextMessage {
			p, err = parseText(*buf)
		}
		switch {
		case upgrading && !c.isTransport(ws):
			if !c.onUpgradePacket(ws, p) {
				wsframe.PutBuffer(buf)
				return
			}
		case err != nil:
			c.terminate("parse error")
		case p.typ == eioClose:
			c.terminate("transport close")
		default:
			c.onPacket(p)
		}
		wsframe.PutBuffer(buf)
	}
}

func (c *Conn) isTransport(ws *websocket.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws == ws
}

// webSocketEnded: the client closed (a close frame or the TCP
// connection), or the WebSocket failed (a message over maxPayload).
func (c *Conn) webSocketEnded(ws *websocket.Conn, err error) {
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
func (c *Conn) failWebSocket(ws *websocket.Conn, code int) {
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
// holds no goroutine for writing. After a server's close it writes the
// queue, then the close frame.
func (c *Conn) writeWebSocket(ws *websocket.Conn) {
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
		if err := writeFrames(ws, frames); err != nil {
			_ = ws.Close() // the reader ends the session
			c.mu.Lock()
			c.writing = false
			c.mu.Unlock()
			return
		}
	}
}

func writeFrames(ws *websocket.Conn, frames []*frame) error {
	var err error
	for i, f := range frames {
		if err == nil {
			_ = ws.SetWriteDeadline(time.Now().Add(writeWait))
			err = writeFrame(ws, f)
		}
		f.release()
		frames[i] = nil
	}
	return err
}

func writeFrame(ws *websocket.Conn, f *frame) error {
	if f.shared {
		if pm := f.wsPrepared(); pm != nil {
			return ws.WritePreparedMessage(pm)
		}
	}
	op := websocket.TextMessage
	if f.binary {
		op = websocket.BinaryMessage
	}
	return ws.WriteMessage(op, f.data)
}

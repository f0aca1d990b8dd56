package sioengine

import (
	"time"

	"github.com/gorilla/websocket"
)

// wsConn is a session's WebSocket: gorilla's on net/http (gorillaWS), or
// a connection on one of gnet's event loops (loopWS, gnet.go).
type wsConn interface {
	// startWriter runs the session's writer (writeWebSocket): on a
	// goroutine of its own, or on the connection's loop.
	startWriter(f func())
	// nonBlocking reports whether writeFrames only hands the frames over
	// (to gnet's loop, bounded there), so that they can be written as
	// they are queued, without a writer.
	nonBlocking() bool
	// writeFrames writes frames, in order, and releases them.
	writeFrames(frames []*frame) error
	// writeText writes one text message (the probe's answer).
	writeText(data []byte) error
	// closeQuietly ends the WebSocket as Node's ws close() does: a close
	// frame without a status code (the client sees 1005), then the TCP
	// connection.
	closeQuietly()
	// drop ends the connection after a write failed; its reader ends the
	// session.
	drop()
	// unwritten is what was handed over and is not written yet, in
	// frames (bytes a loop holds count as frames of 1 KiB); 0 where a
	// writer writes what it takes at once (gorilla).
	unwritten() int
}

// gorillaWS is a WebSocket of the net/http transport.
type gorillaWS struct{ *websocket.Conn }

func (ws *gorillaWS) startWriter(f func()) { go f() }

func (ws *gorillaWS) nonBlocking() bool { return false }

func (ws *gorillaWS) writeText(data []byte) error {
	return ws.WriteMessage(websocket.TextMessage, data)
}

func (ws *gorillaWS) closeQuietly() {
	_ = ws.WriteControl(websocket.CloseMessage, []byte{}, time.Now().Add(time.Second))
	_ = ws.Close()
}

func (ws *gorillaWS) drop() { _ = ws.Close() }

func (ws *gorillaWS) unwritten() int { return 0 }

func (ws *gorillaWS) writeFrames(frames []*frame) error {
	// One deadline for the batch: each frame is written at once or the
	// client is not reading, and writeWait is for such a client.
	err := ws.SetWriteDeadline(time.Now().Add(writeWait))
	for i, f := range frames {
		if err == nil {
			err = ws.writeFrame(f)
		}
		f.release()
		frames[i] = nil
	}
	return err
}

func (ws *gorillaWS) writeFrame(f *frame) error {
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

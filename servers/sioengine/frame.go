package sioengine

import (
	"sync"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/shared/wsframe"
)

// frame is one Engine.IO packet on its way out: the text packet with its
// type byte ("4..." for a message), or a binary message (an attachment).
// It is never changed once queued, so a broadcast queues the same frame
// on every session it goes to.
type frame struct {
	data   []byte
	binary bool
	// pooled, when set, is the buffer data lives in: the frame goes to one
	// session only, and the buffer goes back to the pool once written.
	pooled *[]byte
	// shared: the frame goes to many sessions (a broadcast, a ping).
	shared bool

	// prepared is the WebSocket frame, made once for every session that
	// writes this frame (a broadcast); shared frames only.
	prepareOnce sync.Once
	prepared    *websocket.PreparedMessage
	// wire is the same for gnet: the whole server frame, framed once
	// and handed to every loop unchanged.
	wireOnce sync.Once
	wire     []byte
}

// wsFrame returns the frame as one unmasked WebSocket frame, made once
// for every session that writes it; shared frames only.
func (f *frame) wsFrame() []byte {
	f.wireOnce.Do(func() { f.wire = wsframe.AppendFrame(nil, 0, f.opcode(), f.data) })
	return f.wire
}

// opcode is the frame's WebSocket opcode.
func (f *frame) opcode() ws.OpCode {
	if f.binary {
		return ws.OpBinary
	}
	return ws.OpText
}

// wsPrepared returns the frame as gorilla prepares it for many
// connections: framed (and compressed) once.
func (f *frame) wsPrepared() *websocket.PreparedMessage {
	f.prepareOnce.Do(func() {
		op := websocket.TextMessage
		if f.binary {
			op = websocket.BinaryMessage
		}
		f.prepared, _ = websocket.NewPreparedMessage(op, f.data)
	})
	return f.prepared
}

// payloadBytes is what the metrics count of a frame: a message's data
// without the Engine.IO type byte, an attachment whole, 0 for the rest.
func (f *frame) payloadBytes() int {
	switch {
	case f.binary:
		return len(f.data)
	case len(f.data) > 0 && f.data[0] == eioMessage:
		return len(f.data) - 1
	}
	return 0
}

// release gives a one-session frame's buffer back.
func (f *frame) release() {
	if f.pooled != nil {
		putBuffer(f.pooled)
		f.pooled = nil
	}
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPooled keeps a buffer grown by one huge packet out of the pool.
const maxPooled = 64 << 10

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > maxPooled {
		return
	}
	*b = (*b)[:0]
	buffers.Put(b)
}

// Control frames, shared by every session.
var (
	pingFrame  = &frame{data: []byte{eioPing}, shared: true}
	pongFrame  = &frame{data: []byte{eioPong}, shared: true}
	noopFrame  = &frame{data: []byte{eioNoop}, shared: true}
	closeFrame = &frame{data: []byte{eioClose}, shared: true}
)

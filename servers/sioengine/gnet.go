package sioengine

import (
	"net/http"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// The gnet transport: the Server as the Front of a wsserver gnet target
// (wsserver.Options.Front). Requests are served on the event loops as
// they are on net/http, and a WebSocket session lives on its connection's
// loop: its messages arrive there (wsserver reads the frames, checks size
// and UTF-8, answers pings), its writer runs there as a task of the loop
// when frames are queued, its timers are its loop's (a timing wheel per
// loop, timers.go), and an idle session holds no goroutine. Only
// WebSocket sessions: a polling request never reaches the loops, see
// doc.go.

// openOnLoop opens a session on the WebSocket of up.
func (s *Server) openOnLoop(up wsserver.LoopUpgrader, r *http.Request) {
	up.UpgradeOnLoop(func(p wsserver.LoopPeer) wsserver.Session {
		lws := &loopWS{p: p}
		return &loopSession{c: s.attach(r, lws, s.wheelOf(p.Loop())), ws: lws}
	})
}

// wheelOf is the timing wheel of the sessions of loop, made on first
// sight: their heartbeats and connect timeouts fire as tasks of the loop.
func (s *Server) wheelOf(loop wsserver.Loop) *wheel {
	if w, ok := s.wheels.Load(loop); ok {
		return w.(*wheel)
	}
	w, _ := s.wheels.LoadOrStore(loop, newWheel(loop, wheelTick(s.opts)))
	return w.(*wheel)
}

// closeAtOnce opens a WebSocket only to close it, as Node does with one
// that names a session it cannot upgrade.
func closeAtOnce(p wsserver.LoopPeer) wsserver.Session {
	p.CloseAfterQueue(0)
	return wsserver.NopSession{}
}

// loopWS is a session's WebSocket on a gnet loop.
type loopWS struct{ p wsserver.LoopPeer }

func (w *loopWS) startWriter(f func()) { w.p.Execute(f) }

// nonBlocking: WriteFrames hands frames to the loop without waiting.
func (w *loopWS) nonBlocking() bool { return true }

func (w *loopWS) unwritten() int {
	writes, bytes := w.p.Unwritten()
	return writes + int(bytes>>10)
}

// writeFrames hands what is queued to the loop, in order: a shared frame
// (a broadcast, a ping) as the one wire frame every session writes, the
// session's own frames copied into one buffer between them. The loop
// writes what it was handed with one writev per flush.
func (w *loopWS) writeFrames(frames []*frame) error {
	var err error
	var own []byte
	handOver := func(b []byte) {
		if err == nil && len(b) > 0 {
			err = w.p.WriteFrames(b)
		}
	}
	for i, f := range frames {
		if f.shared {
			handOver(own)
			own = nil
			handOver(f.wsFrame())
		} else {
			if own == nil {
				own = make([]byte, 0, ownBytes(frames[i:]))
			}
			own = wsframe.AppendFrame(own, 0, f.opcode(), f.data)
		}
		f.release()
		frames[i] = nil
	}
	handOver(own)
	return err
}

// ownBytes is what the session's own frames at the head of frames take
// framed.
func ownBytes(frames []*frame) int {
	n := 0
	for _, f := range frames {
		if f.shared {
			break
		}
		n += len(f.data) + wsframe.MaxHeader
	}
	return n
}

func (w *loopWS) writeText(data []byte) error {
	return w.p.WriteFrames(wsframe.AppendFrame(nil, 0, ws.OpText, data))
}

func (w *loopWS) closeQuietly() { w.p.CloseAfterQueue(0) }

// drop: a client that does not read (WriteFrames' bound) is closed with
// 1008, as every WebSocket target closes one.
func (w *loopWS) drop() { w.p.Close(wsserver.ClosePolicyViolation) }

// loopSession gets a session's messages from the loop.
type loopSession struct {
	c  *Conn
	ws *loopWS
}

func (s *loopSession) Message(op wsserver.Op, data []byte) {
	s.c.onWebSocketMessage(s.ws, false, op == wsserver.Text, data)
}

// Closed: the WebSocket ended. A close the server began for a frame the
// rules forbid (1002), bad UTF-8 (1007) or a message over MaxPayload
// (1009) is a "transport error", as on net/http.
func (s *loopSession) Closed() {
	reason := "transport close"
	switch s.ws.p.Reason() {
	case "1002", "1007", "1009", "1008":
		reason = "transport error"
	}
	s.c.terminate(reason)
}

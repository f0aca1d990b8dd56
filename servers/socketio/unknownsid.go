package socketio

import (
	"github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// ReasonUnknownSid is the refused_requests reason of a polling request or
// a WebSocket upgrade that names an Engine.IO session this replica does not
// hold. One process sees it when a client comes back after its session
// ended; a cluster sees it on every request that a balancer without sticky
// sessions sends to another replica than the one that opened the session.
const ReasonUnknownSid = "unknown_sid"

// countUnknownSid counts the requests the engine refuses as "Session ID
// unknown". The engine gives them Node's engine.io answer: a polling request
// gets 400 {"code":1,"message":"Session ID unknown"}, an upgrade 400 with
// the message as its body. Both come through the engine's connection_error
// event, which names the refusal; counting there counts exactly what the
// client was answered, with no second look-up of the session that could
// disagree with the engine's.
func (s *Server) countUnknownSid() {
	s.io.Engine().On("connection_error", func(args ...any) {
		if len(args) == 0 {
			return
		}
		if e, ok := args[0].(*types.ErrorMessage); ok && e.CodeMessage == engine.UNKNOWN_SID {
			s.m.Refused(ReasonUnknownSid)
		}
	})
}

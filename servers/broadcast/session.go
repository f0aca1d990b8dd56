package broadcast

import (
	"encoding/json"
	"fmt"

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// handler joins every connection to the hub, and answers the protocol's
// messages.
type handler struct {
	hub *Hub
	m   *metrics.Metrics
	bus *cluster.Bus // nil without -redis: the local path stays as it is
}

func (h *handler) Open(p wsserver.Peer) wsserver.Session {
	h.hub.Join(p)
	return &session{handler: h, p: p}
}

// session is one subscriber's: 24 bytes, shared handler and peer, since
// every idle subscriber carries one (a copy of the handler made it 48).
type session struct {
	*handler
	p wsserver.Peer
}

func (s *session) Closed() { s.hub.Leave(s.p) }

// request is what the server reads of a client's message.
type request struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

func (s *session) Message(_ wsserver.Op, data []byte) {
	var req request
	if err := json.Unmarshal(data, &req); err != nil {
		s.invalid(protocol.InvalidJSON, "malformed JSON: "+err.Error())
		return
	}
	switch req.Type {
	case protocol.TypeEcho:
		// The same message back, as it came.
		s.hub.SendTo(s.p, wsserver.NewOutgoing(append([]byte(nil), data...)))
	case protocol.TypeBroadcast:
		payload := req.Payload
		if payload == nil {
			payload = json.RawMessage("null")
		}
		if s.bus != nil {
			s.clusterBroadcast(payload)
			return
		}
		s.hub.Broadcast(wsserver.NewOutgoing(protocol.AppendBroadcast(nil, payload)), s.p, func(n int) *wsserver.Outgoing {
			return wsserver.NewOutgoing(protocol.AppendBroadcastResult(nil, payload, n))
		})
	default:
		s.invalid(protocol.InvalidType, fmt.Sprintf("unknown message type %q; want %q or %q", req.Type, protocol.TypeEcho, protocol.TypeBroadcast))
	}
}

// clusterBroadcast hands the broadcast to every local client, the sender
// too, at once, and to the other replicas' through the bus; the result
// goes to the sender once the other replicas have said how many of their
// clients took it (at most cluster.AnswerWait later). The sender's copy
// and its result are two queue entries here, not one Pair: the result is
// not known when the copy goes out.
func (s *session) clusterBroadcast(payload json.RawMessage) {
	frame := protocol.AppendBroadcast(nil, payload)
	local := s.hub.Send(wsserver.NewOutgoing(frame))
	s.bus.Broadcast(frame, func(remote int) {
		s.hub.SendTo(s.p, wsserver.NewOutgoing(protocol.AppendBroadcastResult(nil, payload, local+remote)))
	})
}

// invalid answers a message the server cannot act on, counts it, and keeps
// the connection.
func (s *session) invalid(reason, text string) {
	s.m.Invalid(reason)
	s.hub.SendTo(s.p, wsserver.NewOutgoing(protocol.ErrorMessage(text)))
}

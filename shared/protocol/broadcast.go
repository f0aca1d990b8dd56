package protocol

import (
	"encoding/json"
	"strconv"
)

// The broadcast protocol: JSON text frames, compatible with
// hashrocket/websocket-shootout, so that its websocket-bench client works
// unchanged (DESIGN.md, "Broadcast protocol").
//
//	client: {"type":"echo","payload":X}       server: the same message back
//	client: {"type":"broadcast","payload":X}  server: {"type":"broadcast","payload":X} to every client,
//	                                          then {"type":"broadcastResult","payload":X,"listenerCount":N} to the sender
//	server (-push-interval): {"type":"push","seq":N,"sentAt":UNIX_NANOS,"payload":"..."}
//	server, for a message it cannot act on: {"type":"error","error":"..."}
const (
	TypeEcho            = "echo"
	TypeBroadcast       = "broadcast"
	TypeBroadcastResult = "broadcastResult"
	TypePush            = "push"
	TypeError           = "error"
)

// Reasons of knowngood_invalid_messages_total for the broadcast targets.
const (
	InvalidJSON = "malformed_json"
	InvalidType = "unknown_type"
)

// BroadcastMessage is any message of the protocol, as a client decodes it.
type BroadcastMessage struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// ListenerCount (broadcastResult): the clients the broadcast was
	// handed to, the sender included.
	ListenerCount int `json:"listenerCount,omitempty"`
	// Seq and SentAt (push): the push's number, from 1, and when the
	// server made it, in unix nanoseconds.
	Seq    uint64 `json:"seq,omitempty"`
	SentAt int64  `json:"sentAt,omitempty"`
	// Error (error): what was wrong with the client's message.
	Error string `json:"error,omitempty"`
}

// AppendBroadcast appends {"type":"broadcast","payload":payload}; payload
// is JSON already.
func AppendBroadcast(b []byte, payload json.RawMessage) []byte {
	b = append(b, `{"type":"broadcast","payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}

// AppendBroadcastResult appends the sender's answer to a broadcast.
func AppendBroadcastResult(b []byte, payload json.RawMessage, listeners int) []byte {
	b = append(b, `{"type":"broadcastResult","payload":`...)
	b = append(b, payload...)
	b = append(b, `,"listenerCount":`...)
	b = strconv.AppendInt(b, int64(listeners), 10)
	return append(b, '}')
}

// AppendPush appends a timed push; filler is the payload string, which
// must need no JSON escaping.
func AppendPush(b []byte, seq uint64, sentAt int64, filler string) []byte {
	b = append(b, `{"type":"push","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"sentAt":`...)
	b = strconv.AppendInt(b, sentAt, 10)
	b = append(b, `,"payload":"`...)
	b = append(b, filler...)
	return append(b, `"}`...)
}

// ErrorMessage is the server's answer to a message it cannot act on.
func ErrorMessage(text string) []byte {
	b, _ := json.Marshal(BroadcastMessage{Type: TypeError, Error: text})
	return b
}

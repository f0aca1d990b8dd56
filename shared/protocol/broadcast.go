package protocol

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The broadcast protocol: JSON text frames, compatible with
// hashrocket/websocket-shootout, so that its websocket-bench client works
// unchanged.
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

// PushHead is a timed push up to its seq: a push is PushHead, the seq,
// then what AppendPushTail writes. The cluster's push script writes the
// seq between the two in Redis, where it numbers the push.
const PushHead = `{"type":"push","seq":`

// AppendPush appends a timed push; filler is the payload string, which
// must need no JSON escaping.
func AppendPush(b []byte, seq uint64, sentAt int64, filler string) []byte {
	b = append(b, PushHead...)
	b = strconv.AppendUint(b, seq, 10)
	return AppendPushTail(b, sentAt, filler)
}

// AppendPushTail appends what follows a push's seq.
func AppendPushTail(b []byte, sentAt int64, filler string) []byte {
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

// ParsePush reads a push in exactly the layout AppendPush writes, without
// encoding/json's cost (a client at 100,000 pushes a second spends a
// quarter of its CPU in it). ok is false for anything else, which a client
// then decodes as JSON.
func ParsePush(b []byte) (seq uint64, sentAt int64, ok bool) {
	rest, ok := CutLiteral(b, PushHead)
	if !ok {
		return 0, 0, false
	}
	seq, rest, ok = CutUint(rest)
	if !ok {
		return 0, 0, false
	}
	if rest, ok = CutLiteral(rest, `,"sentAt":`); !ok {
		return 0, 0, false
	}
	at, rest, ok := CutUint(rest)
	if !ok || at > 1<<63-1 {
		return 0, 0, false
	}
	if rest, ok = CutLiteral(rest, `,"payload":"`); !ok || len(rest) < 2 || string(rest[len(rest)-2:]) != `"}` {
		return 0, 0, false
	}
	for _, c := range rest[:len(rest)-2] {
		if c == '"' || c == '\\' || c < 0x20 {
			return 0, 0, false // escapes or another layout: encoding/json knows
		}
	}
	if !utf8.Valid(rest) {
		return 0, 0, false
	}
	return seq, int64(at), true
}

// CutLiteral removes prefix from b: ok is false when b does not start with
// it. With CutUint, it reads messages of a fixed layout (ParsePush).
func CutLiteral(b []byte, prefix string) (rest []byte, ok bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// CutUint reads the decimal number b starts with, as strconv writes it (no
// sign, no leading zero but for 0 itself).
func CutUint(b []byte) (n uint64, rest []byte, ok bool) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || i > 1 && b[0] == '0' {
		return 0, b, false
	}
	n, err := strconv.ParseUint(string(b[:i]), 10, 64)
	return n, b[i:], err == nil
}

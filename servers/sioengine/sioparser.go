package sioengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// Socket.IO v5 packet types, as the first byte of a packet.
const (
	sioConnect      = '0'
	sioDisconnect   = '1'
	sioEvent        = '2'
	sioAck          = '3'
	sioConnectError = '4'
	sioBinaryEvent  = '5'
	sioBinaryAck    = '6'
)

// errBadPacket is a Socket.IO packet that socket.io-parser refuses; the
// session is closed, as Node's socket.io closes it ("forced close").
var errBadPacket = errors.New("invalid Socket.IO packet")

// maxAckID is the largest ack id accepted: JavaScript's largest safe
// integer, which socket.io-client never passes.
const maxAckID = 1<<53 - 1

// sioPacket is one decoded Socket.IO packet: <type>[<n>-][<nsp>,][<id>][<json>].
type sioPacket struct {
	typ         byte
	attachments int
	nsp         string
	id          int64 // -1: none
	data        []byte
}

// parseSIO decodes a packet's header and checks its payload as
// socket.io-parser does. data aliases b.
func parseSIO(b []byte, maxAttachments int) (sioPacket, error) {
	p := sioPacket{id: -1, nsp: "/"}
	if len(b) == 0 || b[0] < sioConnect || b[0] > sioBinaryAck {
		return p, errBadPacket
	}
	p.typ, b = b[0], b[1:]
	if p.typ == sioBinaryEvent || p.typ == sioBinaryAck {
		i := bytes.IndexByte(b, '-')
		n, err := strconv.Atoi(string(b[:max(i, 0)]))
		if i <= 0 || err != nil || n < 0 || n > maxAttachments {
			return p, errBadPacket
		}
		p.attachments, b = n, b[i+1:]
	}
	if len(b) > 0 && b[0] == '/' {
		i := bytes.IndexByte(b, ',')
		if i < 0 {
			p.nsp, b = string(b), nil
		} else {
			p.nsp, b = string(b[:i]), b[i+1:]
		}
	}
	digits := 0
	for digits < len(b) && b[digits] >= '0' && b[digits] <= '9' {
		digits++
	}
	if digits > 0 {
		id, err := strconv.ParseInt(string(b[:digits]), 10, 64)
		if err != nil || id > maxAckID {
			return p, errBadPacket
		}
		p.id, b = id, b[digits:]
	}
	p.data = b
	if !validPayload(p.typ, b) {
		return p, errBadPacket
	}
	return p, nil
}

// validPayload is socket.io-parser's isPayloadValid, for a payload given.
func validPayload(typ byte, data []byte) bool {
	if len(data) == 0 {
		return typ != sioEvent && typ != sioBinaryEvent && typ != sioAck && typ != sioBinaryAck
	}
	if !json.Valid(data) {
		return false
	}
	switch typ {
	case sioConnect:
		return data[0] == '{'
	case sioDisconnect:
		return false
	case sioConnectError:
		return data[0] == '{' || data[0] == '"'
	case sioEvent, sioBinaryEvent:
		return data[0] == '[' && validEventName(data)
	}
	return data[0] == '['
}

// reserved are the event names a client may not send.
var reserved = []string{"connect", "connect_error", "disconnect", "disconnecting", "newListener", "removeListener"}

func validEventName(array []byte) bool {
	elems := splitArray(array)
	if len(elems) == 0 {
		return false
	}
	first := elems[0]
	if first[0] >= '0' && first[0] <= '9' || first[0] == '-' {
		return true // a number names an event too
	}
	if first[0] != '"' {
		return false
	}
	var name string
	if json.Unmarshal(first, &name) != nil {
		return false
	}
	for _, r := range reserved {
		if name == r {
			return false
		}
	}
	return true
}

// splitArray returns the elements of a valid JSON array, as they were
// written (whitespace around them trimmed).
func splitArray(array []byte) []json.RawMessage {
	var elems []json.RawMessage
	depth, inString, escaped, start := 0, false, false, 1
	for i := 1; i < len(array); i++ {
		ch := array[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
		case ch == '"':
			inString = true
		case ch == '[' || ch == '{':
			depth++
		case (ch == ']' || ch == '}') && depth > 0:
			depth--
		case (ch == ',' || ch == ']') && depth == 0:
			if e := bytes.TrimSpace(array[start:i]); len(e) > 0 {
				elems = append(elems, e)
			}
			start = i + 1
		}
	}
	return elems
}

// appendHeader writes a packet's header: type, attachments, namespace, id.
func appendHeader(b []byte, typ byte, attachments int, nsp string, id int64) []byte {
	b = append(b, eioMessage, typ)
	if attachments > 0 {
		b = strconv.AppendInt(b, int64(attachments), 10)
		b = append(b, '-')
	}
	if nsp != "/" {
		b = append(b, nsp...)
		b = append(b, ',')
	}
	if id >= 0 {
		b = strconv.AppendInt(b, id, 10)
	}
	return b
}

// appendArray writes [head, args...]; head may be nil.
func appendArray(b []byte, head []byte, args []json.RawMessage) []byte {
	b = append(b, '[')
	if head != nil {
		b = append(b, head...)
	}
	for i, a := range args {
		if i > 0 || head != nil {
			b = append(b, ',')
		}
		b = append(b, a...)
	}
	return append(b, ']')
}

// quote is an event name as a JSON string.
func quote(name string) []byte {
	q, _ := json.Marshal(name)
	return q
}

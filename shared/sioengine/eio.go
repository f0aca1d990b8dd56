package sioengine

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
)

// Engine.IO packet types, as the first byte of a text packet.
const (
	eioOpen    = '0'
	eioClose   = '1'
	eioPing    = '2'
	eioPong    = '3'
	eioMessage = '4'
	eioUpgrade = '5'
	eioNoop    = '6'
)

// recordSeparator separates the packets of an Engine.IO v4 polling
// payload; a binary packet in it is "b" and its base64.
const recordSeparator = 0x1e

// errParse is a packet that is no Engine.IO packet: Node's engine.io
// closes its session with "parse error".
var errParse = errors.New("parse error")

// inPacket is one Engine.IO packet a client sent. data aliases the buffer
// it was read from.
type inPacket struct {
	typ    byte
	data   []byte
	binary bool // a binary message (a Socket.IO attachment)
}

// parseText reads one text packet.
func parseText(b []byte) (inPacket, error) {
	if len(b) == 0 || b[0] < eioOpen || b[0] > eioNoop {
		return inPacket{}, errParse
	}
	return inPacket{typ: b[0], data: b[1:]}, nil
}

// decodePayload splits a v4 polling payload into packets; it calls fn for
// each in order and stops at the first that fn refuses. A base64 packet is
// decoded in place (its text is never longer than the bytes it holds).
func decodePayload(body []byte, fn func(inPacket) bool) error {
	for len(body) > 0 || body != nil {
		var item []byte
		if i := bytes.IndexByte(body, recordSeparator); i >= 0 {
			item, body = body[:i], body[i+1:]
		} else {
			item, body = body, nil
		}
		p, err := parseItem(item)
		if err != nil {
			return err
		}
		if !fn(p) {
			return nil
		}
	}
	return nil
}

func parseItem(item []byte) (inPacket, error) {
	if len(item) > 0 && item[0] == 'b' {
		n, err := base64.StdEncoding.Decode(item[1:], item[1:])
		if err != nil {
			return inPacket{}, errParse
		}
		return inPacket{typ: eioMessage, data: item[1 : 1+n], binary: true}, nil
	}
	return parseText(item)
}

// appendPayload appends one queued frame to a polling payload.
func appendPayload(b []byte, f *frame) []byte {
	if len(b) > 0 {
		b = append(b, recordSeparator)
	}
	if !f.binary {
		return append(b, f.data...)
	}
	b = append(b, 'b')
	return base64.StdEncoding.AppendEncode(b, f.data)
}

// newID is a session or socket id as Node's base64id makes them: 15
// random bytes, 20 characters of URL-safe base64.
func newID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

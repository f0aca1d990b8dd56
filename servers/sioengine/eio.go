package sioengine

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
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

// Engine.IO v3 polling payloads (Options.AllowEIO3) are records of
// "<length>:<packet>", the length in UTF-16 code units as JavaScript
// counts a string, a binary packet as "b4" and its base64. A v3 client
// that asks for base64 (b64=1, as socket.io-client 2 on Node does) reads
// and writes only these; one that can read binary payloads reads them too.

// maxLengthDigits bounds a v3 record's length field: more digits than a
// POST body can hold bytes are a parse error, not an overflow.
const maxLengthDigits = 10

// decodePayloadV3 is decodePayload for an Engine.IO v3 payload.
func decodePayloadV3(body []byte, fn func(inPacket) bool) error {
	for len(body) > 0 {
		colon := bytes.IndexByte(body, ':')
		if colon <= 0 || colon > maxLengthDigits {
			return errParse
		}
		units, err := strconv.Atoi(string(body[:colon]))
		if err != nil || units < 0 {
			return errParse
		}
		body = body[colon+1:]
		n, ok := utf16Prefix(body, units)
		if !ok {
			return errParse
		}
		item := body[:n]
		body = body[n:]
		if n == 0 {
			continue // Node skips an empty record
		}
		p, err := parseItemV3(item)
		if err != nil {
			return err
		}
		if !fn(p) {
			return nil
		}
	}
	return nil
}

// utf16Prefix is the byte length of the first units UTF-16 code units of
// b; false when b is shorter or a character straddles the end.
func utf16Prefix(b []byte, units int) (int, bool) {
	n := 0
	for units > 0 {
		if n >= len(b) {
			return 0, false
		}
		r, size := utf8.DecodeRune(b[n:])
		units -= utf16.RuneLen(r)
		if units < 0 {
			return 0, false
		}
		n += size
	}
	return n, true
}

func parseItemV3(item []byte) (inPacket, error) {
	if item[0] != 'b' {
		return parseText(item)
	}
	if len(item) < 2 || item[1] != eioMessage {
		return inPacket{}, errParse
	}
	n, err := base64.StdEncoding.Decode(item[2:], item[2:])
	if err != nil {
		return inPacket{}, errParse
	}
	return inPacket{typ: eioMessage, data: item[2 : 2+n], binary: true}, nil
}

// appendPayloadV3 appends one queued frame to a v3 polling payload.
func appendPayloadV3(b []byte, f *frame) []byte {
	if !f.binary {
		b = strconv.AppendInt(b, int64(utf16Len(f.data)), 10)
		b = append(b, ':')
		return append(b, f.data...)
	}
	b = strconv.AppendInt(b, int64(2+base64.StdEncoding.EncodedLen(len(f.data))), 10)
	b = append(b, ':', 'b', eioMessage)
	return base64.StdEncoding.AppendEncode(b, f.data)
}

// utf16Len is the length of UTF-8 text as JavaScript counts it.
func utf16Len(b []byte) int {
	units := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		units += utf16.RuneLen(r)
		b = b[size:]
	}
	return units
}

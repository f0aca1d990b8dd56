package sioredis

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// The request types of @socket.io/redis-adapter 8.3.0, for messages
// between servers on the request and response channels.
const (
	typeSockets          = 0 // ids of the sockets in some rooms
	typeAllRooms         = 1 // names of every room
	typeRemoteJoin       = 2
	typeRemoteLeave      = 3
	typeRemoteDisconnect = 4
	typeRemoteFetch      = 5 // id, handshake, rooms and data of the sockets in some rooms
)

// prefix is the adapter's default key ("socket.io"); Node servers that set
// another key option share nothing with this one.
const prefix = "socket.io"

// channels are the Redis channels of one namespace.
type channels struct {
	broadcast string // socket.io#NSP#; a broadcast to one room goes to socket.io#NSP#ROOM#
	request   string // socket.io-request#NSP#
	response  string // socket.io-response#NSP#
	specific  string // socket.io-response#NSP#UID#, for servers that answer there
}

func channelsOf(nsp, uid string) channels {
	c := channels{
		broadcast: prefix + "#" + nsp + "#",
		request:   prefix + "-request#" + nsp + "#",
		response:  prefix + "-response#" + nsp + "#",
	}
	c.specific = c.response + uid + "#"
	return c
}

// broadcastChannel is where a broadcast to rooms is published: the room's
// own channel when there is exactly one (servers without a socket in it
// drop it unread), the namespace's otherwise.
func (c channels) broadcastChannel(rooms []string) string {
	if len(rooms) == 1 {
		return c.broadcast + rooms[0] + "#"
	}
	return c.broadcast
}

// uidAlphabet and uidLen are those of the uid2 package the Node adapter
// names servers and requests with: six letters or digits. A server drops
// the broadcasts that carry its own uid (it has served its sockets
// already), so the uid must differ between servers: 62^6 values drawn at
// random make a collision in a cluster of a few servers negligible.
const (
	uidAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	uidLen      = 6
)

func newUID() string {
	var b [uidLen]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		// 256 mod 62 leaves a bias of under 2% on 8 letters: harmless
		// for names that only need to differ.
		b[i] = uidAlphabet[int(b[i])%len(uidAlphabet)]
	}
	return string(b[:])
}

// wirePacket is a Socket.IO packet as the Node adapter encodes it, fields
// in its order: {type, data, nsp}.
type wirePacket struct {
	Type int    `msgpack:"type"`
	Data []any  `msgpack:"data"`
	Nsp  string `msgpack:"nsp"`
}

// wireOpts is a broadcast's options: {rooms, except, flags}. Rooms are
// strings, but a Node server may send a number for a numeric room.
type wireOpts struct {
	Rooms  []any          `msgpack:"rooms"`
	Except []any          `msgpack:"except"`
	Flags  map[string]any `msgpack:"flags"`
}

// broadcastMsg is one message of the broadcast channels:
// msgpack [uid, packet, opts].
type broadcastMsg struct {
	UID    string
	Packet wirePacket
	Opts   wireOpts
}

// encodeBroadcast encodes m as notepack.io (the Node adapter's msgpack)
// does: integral numbers as the smallest integer, others as float64,
// Buffers as bin, empty arrays as arrays.
func encodeBroadcast(m broadcastMsg) ([]byte, error) {
	head, err := encodeHead(m.UID, m.Packet)
	if err != nil {
		return nil, err
	}
	return appendOpts(head, m.Opts)
}

// notepack is an encoder that writes as notepack.io does.
func notepack(buf *bytes.Buffer) *msgpack.Encoder {
	enc := msgpack.NewEncoder(buf)
	enc.UseCompactInts(true)
	enc.UseCompactFloats(true)
	enc.SetSortMapKeys(true)
	return enc
}

// encodeHead encodes a broadcast's first two elements, [uid, packet, ...:
// the part made once; the options follow when it is published
// (appendOpts), with its expiry.
func encodeHead(uid string, p wirePacket) ([]byte, error) {
	var buf bytes.Buffer
	enc := notepack(&buf)
	p.Data = normalize(p.Data).([]any)
	if err := enc.EncodeArrayLen(3); err != nil {
		return nil, err
	}
	if err := enc.EncodeString(uid); err != nil {
		return nil, err
	}
	if err := enc.Encode(&p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendOpts appends a broadcast's options, its last element, to head.
func appendOpts(head []byte, o wireOpts) ([]byte, error) {
	if o.Rooms == nil {
		o.Rooms = []any{}
	}
	if o.Except == nil {
		o.Except = []any{}
	}
	if o.Flags == nil {
		o.Flags = map[string]any{}
	}
	buf := bytes.NewBuffer(head[:len(head):len(head)])
	if err := notepack(buf).Encode(&o); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// expiresFlag is the flag a knowngood replica adds to a broadcast's
// options: when its publish was given up (unix ms), past which a replica
// that gets it drops it. Node's adapter passes flags it does not know
// over; a Node server's broadcasts carry none and are never dropped.
const expiresFlag = "knowngoodExpires"

// expiredFlag reports whether flags say that the broadcast came too late,
// and takes the flag out. The expiry is the sender's clock: servers'
// clocks must agree to well under the publish wait.
func expiredFlag(flags map[string]any) bool {
	v, ok := flags[expiresFlag]
	if !ok {
		return false
	}
	delete(flags, expiresFlag)
	// A unix time in ms decodes as the integer type that holds it.
	var ms int64
	switch n := v.(type) {
	case int64:
		ms = n
	case uint64:
		ms = int64(min(n, math.MaxInt64))
	case uint32:
		ms = int64(n)
	default:
		return false
	}
	return time.Now().UnixMilli() > ms
}

// errNotBroadcast is a message of the broadcast channels that is not
// [uid, packet, opts].
var errNotBroadcast = errors.New("not a [uid, packet, opts] array")

// decodeBroadcast decodes a message of the broadcast channels. Numbers come
// back as the smallest Go integer or float64, binary as []byte (the loose
// decoding would make it a string), maps as map[string]any: what
// encoding/json and the Socket.IO encoder take.
func decodeBroadcast(b []byte) (broadcastMsg, error) {
	var m broadcastMsg
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return m, err
	}
	if n != 3 {
		return m, errNotBroadcast
	}
	if m.UID, err = dec.DecodeString(); err != nil {
		return m, err
	}
	if err := dec.Decode(&m.Packet); err != nil {
		return m, err
	}
	if err := dec.Decode(&m.Opts); err != nil {
		return m, err
	}
	if m.Packet.Nsp == "" {
		m.Packet.Nsp = "/" // as the Node adapter reads a packet without one
	}
	return m, nil
}

// normalize makes event arguments msgpack-ready the way Node holds them:
// the library's buffers become []byte (bin); maps and arrays are walked.
func normalize(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalize(e)
		}
		return out
	case types.BufferInterface:
		return bytes.Clone(v.Bytes())
	case io.Reader:
		b, _ := io.ReadAll(v)
		return b
	}
	return v
}

// roomNames converts wire rooms (strings, or numbers from a Node server
// that joined a numeric room) to strings as the Node adapter compares them.
func roomNames(rooms []any) []string {
	out := make([]string, 0, len(rooms))
	for _, r := range rooms {
		switch r := r.(type) {
		case string:
			out = append(out, r)
		case float64, float32, int64, uint64, int, int8, int16, int32, uint, uint8, uint16, uint32:
			out = append(out, fmt.Sprint(r))
		}
	}
	return out
}

func anyRooms(rooms []string) []any {
	out := make([]any, len(rooms))
	for i, r := range rooms {
		out[i] = r
	}
	return out
}

// request is a message of the request channel. The Node adapter sends JSON
// (and msgpack for the broadcasts with acks, which this adapter does not
// serve).
type request struct {
	UID       string       `json:"uid"`
	RequestID string       `json:"requestId,omitempty"`
	Type      int          `json:"type"`
	Rooms     []string     `json:"rooms,omitempty"` // SOCKETS; REMOTE_JOIN and REMOTE_LEAVE: the rooms to join or leave
	Opts      *requestOpts `json:"opts,omitempty"`  // REMOTE_FETCH, REMOTE_JOIN, REMOTE_LEAVE, REMOTE_DISCONNECT
	Close     bool         `json:"close,omitempty"` // REMOTE_DISCONNECT
}

type requestOpts struct {
	Rooms  []string `json:"rooms"`
	Except []string `json:"except"`
}

// response is a message of the response channels, as JSON.
type response struct {
	RequestID string            `json:"requestId"`
	Sockets   []json.RawMessage `json:"sockets,omitempty"` // SOCKETS: ids (strings); REMOTE_FETCH: objects
	Rooms     []string          `json:"rooms,omitempty"`
}

// decodeRequest reads a request: JSON when it starts with '{', as the Node
// adapter tells them apart. Anything else (msgpack: a broadcast with acks)
// gives ok false.
func decodeRequest(b []byte) (r request, ok bool) {
	if len(b) == 0 || b[0] != '{' {
		return r, false
	}
	// rooms may hold numbers from a Node server: read them loosely.
	var raw struct {
		request
		Rooms []any `json:"rooms"`
		Opts  *struct {
			Rooms  []any `json:"rooms"`
			Except []any `json:"except"`
		} `json:"opts"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return r, false
	}
	r = raw.request
	r.Rooms = roomNames(raw.Rooms)
	if raw.Opts != nil {
		r.Opts = &requestOpts{Rooms: roomNames(raw.Opts.Rooms), Except: roomNames(raw.Opts.Except)}
	}
	return r, true
}

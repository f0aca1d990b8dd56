package sioredis

import (
	"bytes"
	"encoding/json"

	"github.com/knowngood/knowngood/servers/sioengine"
	"github.com/knowngood/knowngood/shared/metrics"
)

// packetEvent and packetBinaryEvent are the Socket.IO packet types a
// broadcast of an event carries on the wire (Node's emit sends EVENT; the
// encoder of each server makes it binary when it holds buffers).
const (
	packetEvent       = 2
	packetBinaryEvent = 5
)

// Native is one namespace's adapter on the project's own engine
// (servers/sioengine): the same Redis side, channels and encoding as the
// zishang520 Adapter, so that native replicas, zishang520 replicas and
// Node servers share one cluster.
type Native struct {
	*link
	nsp *sioengine.Namespace
}

// NewNative subscribes for nsp and starts its publisher; Close stops them.
func NewNative(opts Options, nsp *sioengine.Namespace) *Native {
	a := &Native{nsp: nsp}
	a.link = newLink(opts, nsp.Name(), nativeLocal{nsp})
	a.init()
	return a
}

// Close unsubscribes and stops the adapter's goroutines.
func (a *Native) Close() { a.close() }

// Publish sends the other servers an event this replica broadcast to
// room ("" = the namespace): args are JSON, with the placeholders of the
// Socket.IO protocol for attachments. It is decoded into values (and the
// attachments into buffers) once, to be encoded as Node's adapter does.
func (a *Native) Publish(room, event string, args []json.RawMessage, attachments [][]byte) {
	data, err := wireData(event, args, attachments)
	if err != nil {
		a.opts.Log.Debug("sioredis: broadcast not decodable", "err", err)
		a.opts.Metrics.Cluster(metrics.ClusterOut, metrics.ClusterFailed, 1)
		return
	}
	var rooms []string
	if room != "" {
		rooms = []string{room}
	}
	a.publishBroadcast(wirePacket{Type: packetEvent, Data: data}, rooms, nil, map[string]any{})
}

// wireData is [event, args...] as values: numbers float64 (encoded as
// integers when integral, as notepack.io does), each attachment's
// placeholder replaced by its bytes.
func wireData(event string, args []json.RawMessage, attachments [][]byte) ([]any, error) {
	data := make([]any, 1, 1+len(args))
	data[0] = event
	for _, arg := range args {
		var v any
		if err := json.Unmarshal(arg, &v); err != nil {
			return nil, err
		}
		data = append(data, fillPlaceholders(v, attachments))
	}
	return data, nil
}

func fillPlaceholders(v any, attachments [][]byte) any {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			v[i] = fillPlaceholders(e, attachments)
		}
	case map[string]any:
		if p, _ := v["_placeholder"].(bool); p { // as socket.io-parser reconstructs it
			if num, ok := v["num"].(float64); ok && num >= 0 && num < float64(len(attachments)) && num == float64(int(num)) {
				return attachments[int(num)]
			}
		}
		for k, e := range v {
			v[k] = fillPlaceholders(e, attachments)
		}
	}
	return v
}

// nativeLocal is a sioengine namespace as the link sees it.
type nativeLocal struct{ nsp *sioengine.Namespace }

// deliver writes another server's event to the sockets it is for,
// encoded once for all of them. Flags (volatile, compress) are not read:
// the engine writes every packet, uncompressed unless -compression.
func (l nativeLocal) deliver(p wirePacket, rooms, except []string, _ map[string]any) int {
	if p.Type != packetEvent && p.Type != packetBinaryEvent || len(p.Data) == 0 {
		return 0
	}
	event, ok := p.Data[0].(string)
	if !ok {
		return 0
	}
	args, attachments, err := jsonArgs(p.Data[1:])
	if err != nil {
		return 0
	}
	return l.nsp.BroadcastTo(rooms, except, event, args, attachments)
}

// jsonArgs encodes decoded values as the event's JSON arguments, each
// buffer replaced by a placeholder and moved to the attachments. As
// JSON.stringify writes them, but for object keys, which come sorted
// (msgpack's maps, decoded, kept no order).
func jsonArgs(values []any) ([]json.RawMessage, [][]byte, error) {
	var attachments [][]byte
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // JSON.stringify leaves <, > and & as they are
	args := make([]json.RawMessage, len(values))
	for i, v := range values {
		buf.Reset()
		if err := enc.Encode(placeholders(v, &attachments)); err != nil {
			return nil, nil, err
		}
		args[i] = bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	return args, attachments, nil
}

func placeholders(v any, attachments *[][]byte) any {
	switch v := v.(type) {
	case []byte:
		*attachments = append(*attachments, v)
		return map[string]any{"_placeholder": true, "num": len(*attachments) - 1}
	case []any:
		for i, e := range v {
			v[i] = placeholders(e, attachments)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = placeholders(e, attachments)
		}
	}
	return v
}

func (l nativeLocal) hasRoom(room string) bool { return l.nsp.RoomLen(room) > 0 }

func (l nativeLocal) ids(rooms, except []string) []string {
	sockets := l.nsp.Select(rooms, except)
	ids := make([]string, len(sockets))
	for i, s := range sockets {
		ids[i] = s.ID()
	}
	return ids
}

func (l nativeLocal) allRooms() []string { return l.nsp.Rooms() }

// fetch describes the sockets as Node's fetchSockets() receives them; the
// engine keeps no request headers, so the handshake holds the auth only.
func (l nativeLocal) fetch(rooms, except []string) []fetchSocket {
	var out []fetchSocket
	for _, s := range l.nsp.Select(rooms, except) {
		out = append(out, fetchSocket{ID: s.ID(), Handshake: map[string]any{"auth": s.Auth()},
			Rooms: nonNil(s.Rooms()), Data: map[string]any{}})
	}
	return out
}

func (l nativeLocal) apply(req request) {
	for _, s := range l.nsp.Select(req.Opts.Rooms, req.Opts.Except) {
		switch req.Type {
		case typeRemoteJoin:
			for _, r := range req.Rooms {
				s.Join(r)
			}
		case typeRemoteLeave:
			for _, r := range req.Rooms {
				s.Leave(r)
			}
		case typeRemoteDisconnect:
			if req.Close {
				s.Conn().Close()
			} else {
				s.Disconnect()
			}
		}
	}
}

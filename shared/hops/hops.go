// Package hops stamps the events of a load client that asks for it, so
// that a message's latency splits by hop: client -> replica, inside the
// replica, the Redis hop between replicas, and replica -> client.
//
// A client asks by sending an event argument that is a JSON object with
// an object member "hops" (and, to time its first hop, a member "t": its
// send time in microseconds since the Unix epoch). The targets add their
// stamps to that "hops" object, in microseconds since the Unix epoch:
//
//   - rx: the replica's handler got the event (its read queue is before);
//   - tx: the replica handed its answer over: the ack or echo to the
//     sender's writer, a broadcast to its clients' writers and to Redis;
//   - dlv: another replica read the broadcast from Redis (its clients get
//     it with this stamp).
//
// The receiving client stamps its own arrival: arrival - tx (or dlv) is the
// hop back, through the replica's writer queue, nginx and the client's
// reader. On one machine the stamps share one clock; across machines each
// difference also holds the offset between the two clocks, so only the
// replica's own hop (tx - rx) and the Redis hop between replicas on hosts
// with synchronized clocks keep their meaning.
//
// An argument without "hops" is passed on untouched, so that clients that
// do not ask see exactly what they sent.
package hops

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// Field is the member of an argument object that asks for stamps, and
// SendTime the member with the client's send time.
const (
	Field    = "hops"
	SendTime = "t"
)

// The stamps, as their keys in the "hops" object.
const (
	Received  = "rx"
	Sent      = "tx"
	Delivered = "dlv"
)

// The hops a replica times from the stamps, as knowngood_hop_seconds
// labels them.
const (
	ClientToReplica = "client_to_replica" // rx - t
	Replica         = "replica"           // tx - rx
	Redis           = "redis"             // dlv - tx
	// ReplicaToClient is the hop only the receiving client times:
	// its arrival - tx (or dlv).
	ReplicaToClient = "replica_to_client"
)

// Order is the hops in the order a message takes them.
var Order = []string{ClientToReplica, Replica, Redis, ReplicaToClient}

// Observe receives the duration of the hop a stamp ends.
type Observe func(hop string, d time.Duration)

// before is the stamp each stamp is timed from, and the hop between.
var before = map[string]struct{ stamp, hop string }{
	Received:  {SendTime, ClientToReplica},
	Sent:      {Received, Replica},
	Delivered: {Sent, Redis},
}

var quotedField = []byte(`"` + Field + `"`)

// JSON returns arg with stamp set to now in its "hops" object, and
// observes the hop it ends; arg itself when it asks for no stamps.
func JSON(arg json.RawMessage, stamp string, now time.Time, observe Observe) json.RawMessage {
	if !bytes.Contains(arg, quotedField) {
		return arg // the common case, without a parse
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(arg, &obj) != nil {
		return arg
	}
	var h map[string]json.RawMessage
	if raw, ok := obj[Field]; !ok || json.Unmarshal(raw, &h) != nil || h == nil {
		return arg
	}
	us := now.UnixMicro()
	prev := before[stamp]
	from := h[prev.stamp]
	if prev.stamp == SendTime {
		from = obj[SendTime]
	}
	if t, err := strconv.ParseInt(string(from), 10, 64); err == nil {
		observeSince(observe, prev.hop, t, us)
	}
	h[stamp] = strconv.AppendInt(nil, us, 10)
	hb, err := json.Marshal(h)
	if err != nil {
		return arg
	}
	obj[Field] = hb
	out, err := json.Marshal(obj)
	if err != nil {
		return arg
	}
	return out
}

// Value sets stamp to now in v's "hops" object, in place, when v is a
// decoded object (map[string]any) that asks for stamps, and observes the
// hop it ends.
func Value(v any, stamp string, now time.Time, observe Observe) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	h, ok := obj[Field].(map[string]any)
	if !ok {
		return
	}
	us := now.UnixMicro()
	prev := before[stamp]
	from := h[prev.stamp]
	if prev.stamp == SendTime {
		from = obj[SendTime]
	}
	if t, ok := integer(from); ok {
		observeSince(observe, prev.hop, t, us)
	}
	h[stamp] = us
}

// observeSince observes the hop from t to now (both µs); a stamp from the
// future or none at all (a client's clock, or its mistake) is not timed.
func observeSince(observe Observe, hop string, t, now int64) {
	if observe != nil && t > 0 && t <= now {
		observe(hop, time.Duration(now-t)*time.Microsecond)
	}
}

// integer is a decoded number as an int64: JSON decodes to float64,
// msgpack to one of the integer types.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n >= 1 && n < 1<<53 {
			return int64(n), true
		}
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case uint64:
		if n < 1<<63 {
			return int64(n), true
		}
	case uint32:
		return int64(n), true
	}
	return 0, false
}

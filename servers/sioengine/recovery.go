package sioengine

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Connection state recovery (Options.Recovery), as Node's socket.io 4.6+
// does it with its in-memory adapter (SessionAwareAdapter): every event a
// namespace sends without an ack, to one socket or to many, carries one
// more argument, its offset, and is kept for the window; a socket whose
// session ended in a way its client may come back from is kept too (id,
// private id, rooms). A client that CONNECTs within the window with that
// private id and the last offset it read gets the same socket id and
// rooms back, the kept events it missed, and socket.recovered.
//
// Node keeps both for the window only. Here they are bounded in count and
// bytes as well, the oldest going first (Hooks.Evicted counts them): a
// client whose offset went is not recovered, as on Node when its offset
// is older than the window. And a private id recovers once (Node's lets
// two clients recover one, giving two sockets one id).

// Bounds of what a namespace keeps for its sockets to come back to.
const (
	maxKeptSessions = 100_000
	maxKeptPackets  = 100_000
	maxKeptBytes    = 64 << 20
)

// Kinds of what Hooks.Evicted counts.
const (
	EvictedSession = "session"
	EvictedPacket  = "packet"
)

// recoverable reports whether a session that ended with reason may be
// recovered: Node's RECOVERABLE_DISCONNECT_REASONS.
func recoverable(reason string) bool {
	switch reason {
	case "transport error", "transport close", "forced close", "ping timeout", "server shutting down", "forced server close":
		return true
	}
	return false
}

// keptSession is a socket kept for its client to come back to.
type keptSession struct {
	sid, pid string
	rooms    []string
	until    time.Time
}

// keptPacket is an event kept with its offset (id) and whom it went to.
type keptPacket struct {
	id            uint64
	until         time.Time
	rooms, except []string // as Select takes them
	frames        []*frame // shared: queued again as they are
	bytes         int
}

// recovery is what one namespace keeps.
type recovery struct {
	window  time.Duration
	evicted func(kind string)

	mu       sync.Mutex // also orders each event's id and its queuing
	sessions map[string]*keptSession
	order    []*keptSession // by until; restored ones are skipped
	packets  []keptPacket   // by id, from head
	head     int
	bytes    int
	nextID   uint64
}

func newRecovery(window time.Duration, evicted func(string)) *recovery {
	if evicted == nil {
		evicted = func(string) {}
	}
	return &recovery{window: window, evicted: evicted, sessions: map[string]*keptSession{}}
}

// offsetArg is an offset as the event's last argument: a JSON string.
func offsetArg(id uint64) json.RawMessage {
	return json.RawMessage(`"` + strconv.FormatUint(id, 36) + `"`)
}

// keep numbers an event going to the sockets of rooms less except, encodes
// it with its offset, keeps it, and has send queue it, all under mu, so
// that every socket gets the events of the namespace in offset order.
func (r *recovery) keep(nsp string, rooms, except []string, event string, args []json.RawMessage, attachments [][]byte, send func([]*frame)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	id := r.nextID
	withOffset := append(slices.Clip(args), offsetArg(id))
	frames := encodeEvent(nsp, event, -1, withOffset, attachments, true)
	p := keptPacket{id: id, until: time.Now().Add(r.window), rooms: rooms, except: except, frames: frames}
	for _, f := range frames {
		// The frame and its WebSocket encoding, made once for all.
		p.bytes += 2 * len(f.data)
	}
	r.packets = append(r.packets, p)
	r.bytes += p.bytes
	r.trimLocked(time.Now())
	send(frames)
}

// save keeps a socket whose session ended with a recoverable reason.
func (r *recovery) save(s *Socket, rooms []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := &keptSession{sid: s.id, pid: s.pid, rooms: rooms, until: time.Now().Add(r.window)}
	r.sessions[s.pid] = k
	r.order = append(r.order, k)
	r.trimLocked(time.Now())
}

// restoreFor restores the socket a CONNECT's auth names by its pid and
// offset, as the client sends them: strings, or no recovery.
func (r *recovery) restoreFor(auth json.RawMessage, admit func(*keptSession, [][]*frame)) bool {
	var asked struct {
		PID    any `json:"pid"`
		Offset any `json:"offset"`
	}
	if json.Unmarshal(auth, &asked) != nil {
		return false
	}
	pid, ok1 := asked.PID.(string)
	offset, ok2 := asked.Offset.(string)
	if !ok1 || !ok2 {
		return false
	}
	return r.restore(pid, offset, admit)
}

// restore takes the socket kept under pid, if the packet of offset is
// still kept, and has admit register it with the frames of the events it
// missed. admit runs under mu, as keep's send does: an event kept after
// the missed ones were picked waits until the socket is in its rooms, and
// goes to it then. Node has no such gap to close: it restores a socket
// and adds it to its rooms in one turn of its loop.
func (r *recovery) restore(pid, offset string, admit func(*keptSession, [][]*frame)) bool {
	id, err := strconv.ParseUint(offset, 36, 64)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trimLocked(time.Now())
	k := r.sessions[pid]
	if k == nil || err != nil {
		return false
	}
	live := r.packets[r.head:]
	i, found := slices.BinarySearchFunc(live, id, func(p keptPacket, id uint64) int { return cmp.Compare(p.id, id) })
	if !found {
		return false // older than what is kept, or never sent
	}
	delete(r.sessions, pid)
	rooms := append([]string{k.sid}, k.rooms...)
	var missed [][]*frame
	for _, p := range live[i+1:] {
		if includes(rooms, p.rooms, p.except) {
			missed = append(missed, p.frames)
		}
	}
	admit(k, missed)
	return true
}

// includes is Node's shouldIncludePacket: an event sent to rooms less
// except went to a socket in socketRooms.
func includes(socketRooms, rooms, except []string) bool {
	in := len(rooms) == 0
	for _, r := range socketRooms {
		if slices.Contains(except, r) {
			return false
		}
		in = in || slices.Contains(rooms, r)
	}
	return in
}

// trimLocked lets go of what is past its time or over the bounds, the
// oldest first.
func (r *recovery) trimLocked(now time.Time) {
	for r.head < len(r.packets) {
		p := &r.packets[r.head]
		over := len(r.packets)-r.head > maxKeptPackets || r.bytes > maxKeptBytes
		if !over && now.Before(p.until) {
			break
		}
		if over {
			r.evicted(EvictedPacket)
		}
		r.bytes -= p.bytes
		*p = keptPacket{}
		r.head++
	}
	if r.head > len(r.packets)/2 {
		r.packets = append(r.packets[:0], r.packets[r.head:]...)
		r.head = 0
	}
	n := 0
	for n < len(r.order) {
		k := r.order[n]
		kept := r.sessions[k.pid] == k
		over := len(r.sessions) > maxKeptSessions
		if kept && !over && now.Before(k.until) {
			break
		}
		if kept {
			if over {
				r.evicted(EvictedSession)
			}
			delete(r.sessions, k.pid)
		}
		n++
	}
	clear(r.order[:n])
	r.order = r.order[n:]
}

// Recovered reports whether the socket came back with connection state
// recovery (Node's socket.recovered).
func (s *Socket) Recovered() bool { return s.recovered }

package sioengine

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// keepN keeps n events to rooms and returns the offset of the last.
func keepN(r *recovery, n int, rooms ...string) string {
	for range n {
		r.keep("/", rooms, nil, "tick", []json.RawMessage{json.RawMessage(`1`)}, nil, func([]*frame) {})
	}
	return strconv.FormatUint(r.nextID, 36)
}

// restored is r.restore's socket and missed events, or nil.
func restored(r *recovery, pid, offset string) (kept *keptSession, missed [][]*frame) {
	r.restore(pid, offset, func(k *keptSession, m [][]*frame) { kept, missed = k, m })
	return kept, missed
}

// restoredFor is r.restoreFor's socket and missed events, or nil.
func restoredFor(r *recovery, auth json.RawMessage) (kept *keptSession, missed [][]*frame) {
	r.restoreFor(auth, func(k *keptSession, m [][]*frame) { kept, missed = k, m })
	return kept, missed
}

func TestRecoveryMissed(t *testing.T) {
	r := newRecovery(time.Minute, nil)
	s := &Socket{id: "sid", pid: "pid"}
	offset := keepN(r, 2)
	r.save(s, []string{"a"})
	keepN(r, 1)                                                          // to everyone
	keepN(r, 1, "a")                                                     // to its room
	keepN(r, 1, "b")                                                     // not to it
	keepN(r, 1, "sid")                                                   // to it alone
	r.keep("/", nil, []string{"a"}, "tick", nil, nil, func([]*frame) {}) // everyone but room a
	kept, missed := restored(r, "pid", offset)
	if kept == nil || kept.sid != "sid" || len(kept.rooms) != 1 || kept.rooms[0] != "a" {
		t.Fatalf("restore: %+v; want sid, in room a", kept)
	}
	if len(missed) != 3 {
		t.Errorf("%d events missed; want 3 (to all, to room a, to its id)", len(missed))
	}
	var last []json.RawMessage
	_ = json.Unmarshal(missed[2][0].data[2:], &last) // after "42"
	if want := `"` + strconv.FormatUint(r.nextID-1, 36) + `"`; len(last) == 0 || string(last[len(last)-1]) != want {
		t.Errorf("the kept event %s; want its offset %s last", missed[2][0].data, want)
	}
	if again, _ := restored(r, "pid", offset); again != nil {
		t.Error("a private id recovered twice")
	}
}

// TestRecoveryAdmitsUnderLock: the socket is admitted (in its rooms)
// under the lock every kept event is numbered and sent under, so an
// event comes either among the missed ones or to the socket in its
// rooms, never between the two.
func TestRecoveryAdmitsUnderLock(t *testing.T) {
	r := newRecovery(time.Minute, nil)
	r.save(&Socket{id: "sid", pid: "pid"}, nil)
	offset := keepN(r, 1)
	admitted := r.restore("pid", offset, func(*keptSession, [][]*frame) {
		if r.mu.TryLock() {
			r.mu.Unlock()
			t.Error("admitted outside the lock keep takes: an event kept meanwhile would be lost")
		}
	})
	if !admitted {
		t.Fatal("not restored")
	}
}

func TestRecoveryRefuses(t *testing.T) {
	r := newRecovery(time.Minute, nil)
	r.save(&Socket{id: "sid", pid: "pid"}, nil)
	offset := keepN(r, 1)
	for _, c := range []struct{ name, pid, offset string }{
		{"unknown pid", "other", offset},
		{"unknown offset", "pid", "zzz"},
		{"not an offset", "pid", "!"},
	} {
		if kept, _ := restored(r, c.pid, c.offset); kept != nil {
			t.Errorf("%s: recovered", c.name)
		}
	}
	for _, auth := range []string{`{}`, `{"pid":"pid"}`, `{"pid":1,"offset":"1"}`, `not json`} {
		if kept, _ := restoredFor(r, json.RawMessage(auth)); kept != nil {
			t.Errorf("auth %s: recovered", auth)
		}
	}
	if kept, _ := restoredFor(r, json.RawMessage(`{"pid":"pid","offset":"`+offset+`"}`)); kept == nil {
		t.Error("a kept socket with a kept offset: not recovered")
	}
}

func TestRecoveryExpires(t *testing.T) {
	r := newRecovery(time.Millisecond, nil)
	offset := keepN(r, 1)
	r.save(&Socket{id: "sid", pid: "pid"}, nil)
	time.Sleep(5 * time.Millisecond) // the window, which is the subject here
	if kept, _ := restored(r, "pid", offset); kept != nil {
		t.Error("recovered after the window")
	}
	if len(r.sessions) != 0 || len(r.packets)-r.head != 0 || r.bytes != 0 {
		t.Errorf("after the window: %d sessions, %d packets, %d bytes kept", len(r.sessions), len(r.packets)-r.head, r.bytes)
	}
}

func TestRecoveryBounds(t *testing.T) {
	evicted := map[string]int{}
	r := newRecovery(time.Hour, func(kind string) { evicted[kind]++ })
	first := keepN(r, 1)
	keepN(r, maxKeptPackets)
	if got := len(r.packets) - r.head; got != maxKeptPackets || evicted[EvictedPacket] != 1 {
		t.Errorf("%d kept, %d evicted; want %d, 1", got, evicted[EvictedPacket], maxKeptPackets)
	}
	r.save(&Socket{id: "s0", pid: "p0"}, nil)
	if kept, _ := restored(r, "p0", first); kept != nil {
		t.Error("recovered from an offset let go")
	}
	for i := range maxKeptSessions + 1 {
		r.save(&Socket{id: "s", pid: "p" + strconv.Itoa(i)}, nil)
	}
	if len(r.sessions) != maxKeptSessions || evicted[EvictedSession] != 1 {
		t.Errorf("%d sessions kept, %d evicted; want %d, 1", len(r.sessions), evicted[EvictedSession], maxKeptSessions)
	}
	big := make([]byte, 1<<20)
	for range 2 * maxKeptBytes / len(big) {
		r.keep("/", nil, nil, "tick", nil, [][]byte{big}, func([]*frame) {})
	}
	if r.bytes > maxKeptBytes {
		t.Errorf("%d bytes kept; want at most %d", r.bytes, maxKeptBytes)
	}
}

package protocol

import (
	"encoding/json"
	"testing"
)

// TestParsePush: ParsePush reads what AppendPush writes, agrees with
// encoding/json whenever it says ok, and says not ok for any other layout.
func TestParsePush(t *testing.T) {
	for _, c := range []struct {
		seq    uint64
		sentAt int64
		filler string
	}{{1, 1764489600000000000, "xxxx"}, {0, 0, ""}, {1<<64 - 1, 1<<63 - 1, "héllo"}} {
		b := AppendPush(nil, c.seq, c.sentAt, c.filler)
		seq, at, ok := ParsePush(b)
		if !ok || seq != c.seq || at != c.sentAt {
			t.Errorf("%s: %d %d %v", b, seq, at, ok)
		}
	}
	for _, b := range []string{
		`{"seq":1,"type":"push","sentAt":2,"payload":"x"}`, // another order
		`{"type":"push","seq":1,"sentAt":2,"payload":"a\"b"}`,
		`{"type":"push","seq":1,"sentAt":2,"payload":"a\\b"}`,
		`{"type":"push","seq":01,"sentAt":2,"payload":"x"}`,
		`{"type":"push","seq":-1,"sentAt":2,"payload":"x"}`,
		`{"type":"push","seq":1,"sentAt":9223372036854775808,"payload":"x"}`,
		`{"type":"push","seq":18446744073709551616,"sentAt":2,"payload":"x"}`,
		`{"type":"push","seq":1,"sentAt":2,"payload":"x"} `,
		`{"type":"push","seq":1,"sentAt":2,"payload":"x"`,
		`{"type":"push","seq":1,"sentAt":2}`,
		`{"type":"push","seq":1,"sentAt":2,"payload":"` + "\xff" + `"}`,
		`{"type":"push","seq":`,
		``,
	} {
		if seq, at, ok := ParsePush([]byte(b)); ok {
			t.Errorf("%s: ok (%d %d); want not ok", b, seq, at)
		}
	}
}

// FuzzParsePush: whatever ParsePush accepts, encoding/json reads the same.
func FuzzParsePush(f *testing.F) {
	f.Add(string(AppendPush(nil, 7, 123, "xx")))
	f.Add(`{"type":"push","seq":1,"sentAt":2,"payload":"\u0041"}`)
	f.Fuzz(func(t *testing.T, s string) {
		seq, at, ok := ParsePush([]byte(s))
		if !ok {
			return
		}
		var m BroadcastMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil || m.Type != TypePush || m.Seq != seq || m.SentAt != at {
			t.Fatalf("%q: ParsePush %d %d; encoding/json %+v %v", s, seq, at, m, err)
		}
	})
}

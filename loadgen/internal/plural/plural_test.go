package plural

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Of(1, "message"), "1 message"},
		{Of(0, "message"), "0 messages"},
		{Of(int64(2), "message"), "2 messages"},
		{Of(uint64(1), "connection"), "1 connection"},
		{Of(3, "reply"), "3 replies"},
		{Of(2, "day"), "2 days"},
		{Of(2, "batch"), "2 batches"},
		{Of(2, "process"), "2 processes"},
		{Of(2, "handshake"), "2 handshakes"},
		{Of(1, "broadcast/s", "broadcasts/s"), "1 broadcast/s"},
		{Of(5, "broadcast/s", "broadcasts/s"), "5 broadcasts/s"},
		{Noun(1, "sender"), "sender"},
		{Noun(2, "sender"), "senders"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

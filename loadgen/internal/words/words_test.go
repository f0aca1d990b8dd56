package words

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Plural(1, "message"), "1 message"},
		{Plural(0, "message"), "0 messages"},
		{Plural(int64(2), "message"), "2 messages"},
		{Plural(uint64(1), "connection"), "1 connection"},
		{Plural(3, "reply"), "3 replies"},
		{Plural(2, "day"), "2 days"},
		{Plural(2, "batch"), "2 batches"},
		{Plural(2, "process"), "2 processes"},
		{Plural(2, "handshake"), "2 handshakes"},
		{Plural(1, "broadcast/s", "broadcasts/s"), "1 broadcast/s"},
		{Plural(5, "broadcast/s", "broadcasts/s"), "5 broadcasts/s"},
		{Noun(1, "sender"), "sender"},
		{Noun(2, "sender"), "senders"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

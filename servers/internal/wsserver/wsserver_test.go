package wsserver

import (
	"testing"
)

func TestCodeReason(t *testing.T) {
	for code, want := range map[int]string{1000: "1000", 1006: reasonAbnormal, 1002: reasonProtocol, 1009: reasonTooBig, 4001: "4001"} {
		if got := codeReason(code); got != want {
			t.Errorf("codeReason(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestPair(t *testing.T) {
	a, b := NewOutgoing([]byte("a")), NewOutgoing([]byte("b"))
	p := Pair(a, b)
	if string(p.Data) != "a" || p.Then() != b || b.Then() != nil || a.Then() != nil {
		t.Errorf("Pair(a, b) = %q then %v", p.Data, p.Then())
	}
}

func TestNopSession(t *testing.T) {
	var s Session = NopSession{}
	s.Message(Text, []byte("dropped"))
	s.Closed()
	// Embedded, it leaves the hooks the embedder writes.
	var got []string
	r := recorder{got: &got}
	var es Session = r
	es.Message(Binary, []byte("x"))
	es.Closed()
	if len(got) != 1 || got[0] != "x" {
		t.Errorf("got %q", got)
	}
}

type recorder struct {
	NopSession
	got *[]string
}

func (r recorder) Message(_ Op, data []byte) { *r.got = append(*r.got, string(data)) }

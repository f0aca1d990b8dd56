package wsserver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/knowngood/knowngood/shared/wstest"
)

func closeBody(code int, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

// pieces reads src in pieces of the sizes in cuts (then what is left).
type pieces struct {
	src  []byte
	cuts []byte
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.src) == 0 {
		return 0, io.EOF
	}
	n := min(len(b), len(p.src))
	if len(p.cuts) > 0 {
		n = min(n, int(p.cuts[0])+1)
		p.cuts = p.cuts[1:]
	}
	copy(b, p.src[:n])
	p.src = p.src[n:]
	return n, nil
}

// guardRead reads in through a frameGuard, with reads of the sizes in
// sizes, as a library's buffered reader would, and returns what the guard
// let through and how it ended; it checks what the guard holds on the way.
func guardRead(t *testing.T, in, cuts, sizes []byte, limit int64) ([]byte, error) {
	fg := &frameGuard{src: &pieces{src: in, cuts: cuts}, max: limit}
	var out []byte
	biggest := 0
	for i := 0; ; i++ {
		size := 4096
		if len(sizes) > 0 {
			size = int(sizes[i%len(sizes)]) + 1
		}
		biggest = max(biggest, size)
		p := make([]byte, size)
		n, err := fg.Read(p)
		out = append(out, p[:n]...)
		if fg.held > len(fg.hold) || len(fg.rest) > max(biggest, holdSize) {
			t.Fatalf("the guard holds %d bytes and %d after a bad frame", fg.held, len(fg.rest))
		}
		if err != nil {
			return out, err
		}
		if n == 0 {
			t.Fatal("a read of nothing without an error")
		}
	}
}

// TestFrameGuard: what the guard lets through before a bad frame, and the
// close code it gives, do not depend on how the bytes come in.
func TestFrameGuard(t *testing.T) {
	good := append(wstest.Frame(0x01, []byte("Hel")), wstest.Frame(0x89, []byte("ping"))...)
	good = append(good, wstest.Frame(0x80, []byte("lo"))...)
	good = append(good, wstest.Frame(0x88, closeBody(1000, "bye"))...)
	for _, c := range []struct {
		name string
		bad  []byte
		code int
	}{
		{"overflowing continuation", append(wstest.Frame(0x01, payload10()), wstest.Header(0x80, math.MaxInt64-9)...), 1009},
		{"top bit", wstest.Header(0x82, 1<<63), 1002},
		{"close of 1 byte", wstest.Frame(0x88, []byte{1}), 1002},
		{"close reason not UTF-8", wstest.Frame(0x88, closeBody(1000, "\xce")), 1007},
		{"fragmented close", wstest.Frame(0x08, nil), 1002},
	} {
		in := append(append([]byte(nil), good...), c.bad...)
		in = append(in, wstest.Frame(0x81, []byte("never read"))...)
		want := len(good)
		if c.name == "overflowing continuation" {
			want += len(wstest.Frame(0x01, payload10()))
		}
		for _, sizes := range [][]byte{nil, {0}, {2, 13}, {200}} {
			out, err := guardRead(t, in, []byte{0, 5, 1, 30}, sizes, 1000)
			var fe *frameError
			if !errors.As(err, &fe) || fe.code != c.code || !bytes.Equal(out, in[:want]) {
				t.Errorf("%s, reads of %v: %d bytes through, %v; want %d, close %d", c.name, sizes, len(out), err, want, c.code)
			}
		}
	}
}

func payload10() []byte { return []byte("0123456789") }

// FuzzFrameGuard: whatever the bytes and however they are cut, the guard
// in front of gorilla and coder lets through the same bytes as when it
// judges them all at once, gives the same close code, and holds at most
// holdSize bytes (and, after a bad frame, what the read had brought past
// it): with -max-message 1000, no frame it passes announces more than the
// message has left.
func FuzzFrameGuard(f *testing.F) {
	f.Add(append(wstest.Frame(0x01, payload10()), wstest.Header(0x80, math.MaxInt64-9)...), []byte{3, 7}, []byte{0})
	f.Add(append(wstest.Frame(0x01, payload10()), wstest.Header(0x80, math.MaxInt64-10)...), []byte{}, []byte{})
	f.Add(wstest.Header(0x82, 1<<63), []byte{1}, []byte{5})
	f.Add(wstest.Frame(0x88, closeBody(1000, "\xce\xba")), []byte{2, 2}, []byte{1})
	f.Add(append(wstest.Frame(0x81, []byte("hi")), wstest.Frame(0x88, closeBody(1000, "bye"))...), []byte{}, []byte{40})
	f.Fuzz(func(t *testing.T, in, cuts, sizes []byte) {
		if len(sizes) > 8 {
			sizes = sizes[:8]
		}
		whole := &frameGuard{max: 1000}
		ok := whole.judge(in)
		out, err := guardRead(t, in, cuts, sizes, 1000)
		var fe *frameError
		switch {
		case whole.failed != nil && (!errors.As(err, &fe) || fe.code != whole.failed.code):
			t.Fatalf("at once: close %d; in pieces: %v", whole.failed.code, err)
		case whole.failed == nil && !errors.Is(err, io.EOF):
			t.Fatalf("at once: no bad frame; in pieces: %v", err)
		case !bytes.Equal(out, in[:ok]):
			t.Fatalf("at once %d bytes through, in pieces %d", ok, len(out))
		}
	})
}

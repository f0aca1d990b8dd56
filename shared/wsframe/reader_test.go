package wsframe

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/shared/wstest"
)

// event is what a test keeps of a Frame: everything but how the input
// was cut (Need, and Skip with the payload beyond the input).
type event struct {
	Kind       Kind
	Op         ws.OpCode
	Compressed bool
	Lost       bool
	Code       int
	Payload    string
}

// feed gives r the bytes of in as a connection's buffer would hold them:
// pieces of the sizes in cuts (then what is left) appended to what was not
// consumed yet. It stops at the first close or bad frame, as the server
// then stops reading frames.
func feed(t *testing.T, r *Reader, in, cuts []byte, max int64) []event {
	t.Helper()
	var buf []byte
	var evs []event
	for src := in; len(src) > 0; {
		n := len(src)
		if len(cuts) > 0 {
			n = min(n, int(cuts[0])+1)
			cuts = cuts[1:]
		}
		buf = append(buf, src[:n]...)
		src = src[n:]
		for len(buf) > 0 {
			var f Frame
			used := r.Next(buf, max, &f)
			if f.Kind == Incomplete {
				if f.Need <= len(buf) || used != 0 {
					t.Fatalf("incomplete with %d bytes in: need %d, used %d", len(buf), f.Need, used)
				}
				break
			}
			if used <= 0 || used > len(buf) {
				t.Fatalf("%+v used %d of %d bytes", f, used, len(buf))
			}
			if int64(r.Held()) > WireLimit(max) {
				t.Fatalf("the reader holds %d bytes; the limit is %d", r.Held(), max)
			}
			evs = append(evs, event{f.Kind, f.Op, f.Compressed, f.Lost, f.Code, string(f.Payload)})
			buf = buf[used:]
			switch f.Kind {
			case Fail, Close, BadClose:
				return evs
			case Message:
				r.Reset()
			}
		}
	}
	return evs
}

func closeFrame(code int, reason string) []byte { return wstest.Frame(0x88, closeBody(code, reason)) }

func cat(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

// TestReader: byte-level cases, one frame rule each, as the client sends
// them (masked, in any length encoding).
func TestReader(t *testing.T) {
	const max = 1000
	big := strings.Repeat("x", 70000)
	mid := strings.Repeat("y", 200)
	fail := func(code int) event { return event{Kind: Fail, Code: code} }
	lost := func(code int) event { return event{Kind: Fail, Code: code, Lost: true} }
	for _, c := range []struct {
		name    string
		in      []byte
		deflate bool
		max     int64
		want    []event
	}{
		{"text", wstest.Frame(0x81, []byte("hi")), false, max, []event{{Kind: Message, Op: ws.OpText, Payload: "hi"}}},
		{"empty binary", wstest.Frame(0x82, nil), false, max, []event{{Kind: Message, Op: ws.OpBinary}}},
		{"16-bit length", wstest.Frame(0x82, []byte(mid)), false, max, []event{{Kind: Message, Op: ws.OpBinary, Payload: mid}}},
		{"64-bit length", wstest.Frame(0x82, []byte(big)), false, 1 << 20, []event{{Kind: Message, Op: ws.OpBinary, Payload: big}}},
		{"ping, pong", cat(wstest.Frame(0x89, []byte("p")), wstest.Frame(0x8a, nil)), false, max,
			[]event{{Kind: Ping, Payload: "p"}, {Kind: Pong}}},
		{"fragments around a ping", cat(wstest.Frame(0x01, []byte("Hel")), wstest.Frame(0x89, nil), wstest.Frame(0x80, []byte("lo"))), false, max,
			[]event{{Kind: Fragment}, {Kind: Ping}, {Kind: Message, Op: ws.OpText, Payload: "Hello"}}},
		{"compressed", wstest.Frame(0xc1, []byte{1, 2}), true, max, []event{{Kind: Message, Op: ws.OpText, Compressed: true, Payload: "\x01\x02"}}},
		{"compressed fragments", cat(wstest.Frame(0x42, []byte{1}), wstest.Frame(0x80, []byte{2})), true, max,
			[]event{{Kind: Fragment}, {Kind: Message, Op: ws.OpBinary, Compressed: true, Payload: "\x01\x02"}}},
		{"close", closeFrame(1000, "bye"), false, max, []event{{Kind: Close, Code: 1000, Payload: "\x03\xe8bye"}}},
		{"close without code", wstest.Frame(0x88, nil), false, max, []event{{Kind: Close, Code: 1005}}},
		{"close of 1 byte", wstest.Frame(0x88, []byte{3}), false, max, []event{{Kind: BadClose, Code: 1002}}},
		{"close code 1005", closeFrame(1005, ""), false, max, []event{{Kind: BadClose, Code: 1002}}},
		{"close reason not UTF-8", closeFrame(1000, "\xce"), false, max, []event{{Kind: BadClose, Code: 1007}}},
		{"close over 125", wstest.Frame(0x88, make([]byte, 126)), false, max, []event{lost(1002)}},
		{"fragmented close", wstest.Frame(0x08, nil), false, max, []event{lost(1002)}},
		{"unmasked", []byte{0x81, 0x02, 'h', 'i'}, false, max, []event{fail(1002)}},
		{"reserved opcode", wstest.Frame(0x83, nil), false, max, []event{fail(1002)}},
		{"RSV1 without deflate", wstest.Frame(0xc1, nil), false, max, []event{fail(1002)}},
		{"RSV2", wstest.Frame(0xa1, nil), true, max, []event{fail(1002)}},
		{"RSV1 on a continuation", cat(wstest.Frame(0x41, nil), wstest.Frame(0xc0, nil)), true, max, []event{{Kind: Fragment}, fail(1002)}},
		{"RSV1 on a ping", wstest.Frame(0xc9, nil), true, max, []event{fail(1002)}},
		{"continuation with none open", wstest.Frame(0x80, nil), false, max, []event{fail(1002)}},
		{"text inside a message", cat(wstest.Frame(0x01, nil), wstest.Frame(0x81, nil)), false, max, []event{{Kind: Fragment}, fail(1002)}},
		{"fragmented ping", wstest.Frame(0x09, nil), false, max, []event{fail(1002)}},
		{"ping over 125", wstest.Frame(0x89, make([]byte, 126)), false, max, []event{fail(1002)}},
		{"over the limit", wstest.Frame(0x82, make([]byte, max+1)), false, max, []event{fail(1009)}},
		{"at the limit", wstest.Frame(0x82, make([]byte, 10)), false, 10, []event{{Kind: Message, Op: ws.OpBinary, Payload: strings.Repeat("\x00", 10)}}},
		{"fragments over the limit", cat(wstest.Frame(0x02, make([]byte, 6)), wstest.Frame(0x80, make([]byte, 5))), false, 10, []event{{Kind: Fragment}, fail(1009)}},
		{"overflowing continuation", cat(wstest.Frame(0x01, []byte("0123456789")), wstest.Header(0x80, math.MaxInt64-9)), false, max, []event{{Kind: Fragment}, fail(1009)}},
		{"length top bit", wstest.Header(0x82, 1<<63), false, max, []event{lost(1002)}},
	} {
		r := &Reader{Deflate: c.deflate}
		if got := feed(t, r, c.in, nil, c.max); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestReaderSkip: a frame refused at its header is consumed as far as it
// has come, and Skip says how much more of it is still to come.
func TestReaderSkip(t *testing.T) {
	in := append(wstest.Header(0x82, 2000), make([]byte, 10)...)
	var r Reader
	var f Frame
	n := r.Next(in, 1000, &f)
	if f.Kind != Fail || f.Code != 1009 || f.Lost || n != len(in) || f.Skip != 1990 {
		t.Fatalf("%+v, %d used", f, n)
	}
	in = append(wstest.Frame(0x82, make([]byte, 1001)), 0x81)
	n = r.Next(in, 1000, &f)
	if f.Kind != Fail || f.Skip != 0 || n != len(in)-1 {
		t.Fatalf("whole bad frame: %+v, %d used of %d", f, n, len(in))
	}
}

func TestAppendHeader(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{0xffff, []byte{0x81, 126, 0xff, 0xff}},
		{0x10000, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	} {
		if got := AppendHeader(nil, 0, ws.OpText, c.n); !bytes.Equal(got, c.want) {
			t.Errorf("%d: % x, want % x", c.n, got, c.want)
		}
	}
	if got := AppendHeader(nil, ws.Rsv(true, false, false), ws.OpBinary, 1); !bytes.Equal(got, []byte{0xc2, 1}) {
		t.Errorf("RSV1: % x", got)
	}
	if got := AppendClose(nil, 1001); !bytes.Equal(got, []byte{0x88, 2, 0x03, 0xe9}) {
		t.Errorf("close: % x", got)
	}
	// What the server writes, the reader reads back once masked.
	frame := AppendFrame(nil, 0, ws.OpText, []byte("hello"))
	h, n, err := ParseHeader(frame)
	if err != nil || n != 2 || h.Masked || !h.Fin || h.Length != 5 || string(frame[n:]) != "hello" {
		t.Errorf("%+v %d %v", h, n, err)
	}
}

func TestDecode(t *testing.T) {
	d := GetDeflater()
	defer PutDeflater(d)
	deflated := func(p []byte) []byte {
		z, err := d.Deflate(p)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Clone(z)
	}
	plain := GetBuffer()
	defer PutBuffer(plain)
	hello := deflated([]byte("hello"))
	if got, code := Decode(ws.OpText, true, hello, plain, 1000); code != 0 || string(got) != "hello" {
		t.Errorf("compressed hello: %q %d", got, code)
	}
	if _, code := Decode(ws.OpBinary, true, deflated(make([]byte, 5000)), plain, 1000); code != 1009 {
		t.Errorf("inflating past the limit: %d, want 1009", code)
	}
	if _, code := Decode(ws.OpBinary, true, []byte{0xff, 0xff, 0xff}, plain, 1000); code != 1002 {
		t.Errorf("corrupt deflate data: %d, want 1002", code)
	}
	if _, code := Decode(ws.OpText, false, []byte("\xce"), nil, 1000); code != 1007 {
		t.Errorf("text not UTF-8: %d, want 1007", code)
	}
	if got, code := Decode(ws.OpBinary, false, []byte("\xce"), nil, 1000); code != 0 || string(got) != "\xce" {
		t.Errorf("binary: %q %d", got, code)
	}
	if _, code := Decode(ws.OpText, true, deflated([]byte("\xce")), plain, 1000); code != 1007 {
		t.Errorf("compressed text not UTF-8: %d, want 1007", code)
	}
}

// FuzzReaderSplits: the same bytes give the same frames, close codes and
// payloads however they are cut, the reader never holds more than the
// limit, and it always either consumes bytes or asks for more than it has.
func FuzzReaderSplits(f *testing.F) {
	f.Add(cat(wstest.Frame(0x01, []byte("Hel")), wstest.Frame(0x89, []byte("ping")), wstest.Frame(0x80, []byte("lo")), closeFrame(1000, "bye")), []byte{0, 5, 1, 30}, false)
	f.Add(cat(wstest.Frame(0x01, []byte("0123456789")), wstest.Header(0x80, math.MaxInt64-9)), []byte{9, 3}, false)
	f.Add(wstest.Header(0x82, 1<<63), []byte{1}, false)
	f.Add(cat(wstest.Frame(0x42, make([]byte, 600)), wstest.Frame(0x80, make([]byte, 399))), []byte{100, 200}, true)
	f.Add(cat(wstest.Frame(0x82, make([]byte, 300)), closeFrame(1000, "\xce")), []byte{2}, false)
	f.Fuzz(func(t *testing.T, in, cuts []byte, deflate bool) {
		if len(cuts) > 32 {
			cuts = cuts[:32]
		}
		whole := feed(t, &Reader{Deflate: deflate}, bytes.Clone(in), nil, 1000)
		split := feed(t, &Reader{Deflate: deflate}, bytes.Clone(in), cuts, 1000)
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("at once:\n%+v\nin pieces %v:\n%+v", whole, cuts, split)
		}
	})
}

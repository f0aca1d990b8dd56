package wsframe

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadMessage(t *testing.T) {
	broken := errors.New("connection reset")
	cases := []struct {
		name string
		r    io.Reader
		max  int64
		want string
		err  error
	}{
		{"empty", strings.NewReader(""), 10, "", nil},
		{"under the limit", strings.NewReader("hello"), 10, "hello", nil},
		{"at the limit", strings.NewReader("0123456789"), 10, "0123456789", nil},
		{"over the limit", strings.NewReader("0123456789x"), 10, "", ErrTooBig},
		{"no limit", strings.NewReader(strings.Repeat("a", 10000)), -1, strings.Repeat("a", 10000), nil},
		{"limit 0, empty", strings.NewReader(""), 0, "", nil},
		{"limit 0, one byte", strings.NewReader("a"), 0, "", ErrTooBig},
		{"a byte at a time", iotest.OneByteReader(strings.NewReader("abcdef")), 6, "abcdef", nil},
		{"data with EOF", iotest.DataErrReader(strings.NewReader("abc")), 3, "abc", nil},
		{"larger than the buffer", strings.NewReader(strings.Repeat("x", 5000)), 5000, strings.Repeat("x", 5000), nil},
		{"an error half-way", io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(broken)), 10, "", broken},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			buf := GetBuffer()
			defer PutBuffer(buf)
			*buf = append(*buf, "left over from the last message"...)
			err := ReadMessage(c.r, buf, c.max)
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if c.err == nil && string(*buf) != c.want {
				t.Errorf("read %q, want %q", *buf, c.want)
			}
		})
	}
}

// TestReadMessageStopsEarly: a message over the limit is not read to its
// end, so that a huge one costs the limit, not its size.
func TestReadMessageStopsEarly(t *testing.T) {
	r := &countingReader{r: bytes.NewReader(make([]byte, 1<<20))}
	buf := GetBuffer()
	defer PutBuffer(buf)
	if err := ReadMessage(r, buf, 100); !errors.Is(err, ErrTooBig) {
		t.Fatalf("error %v, want ErrTooBig", err)
	}
	if r.n > 64<<10 {
		t.Errorf("read %d bytes of a message over a 100-byte limit", r.n)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestPutBufferDropsHuge(t *testing.T) {
	b := make([]byte, 10, keepBuffer)
	PutBuffer(&b)
	if len(b) != 0 {
		t.Errorf("a kept buffer is not emptied: len %d", len(b))
	}
	huge := make([]byte, 10, keepBuffer+1)
	PutBuffer(&huge)
	if len(huge) != 10 {
		t.Error("a buffer over keepBuffer was taken back")
	}
}

func TestWireLimit(t *testing.T) {
	cases := []struct{ max, want int64 }{
		{0, 1024},
		{64, 64 + 1 + 1024},
		{1 << 20, 1<<20 + 1<<14 + 1024},
		{math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 - 1000, math.MaxInt64},
	}
	for _, c := range cases {
		if got := WireLimit(c.max); got != c.want {
			t.Errorf("WireLimit(%d) = %d, want %d", c.max, got, c.want)
		}
		if got := WireLimit(c.max); got < c.max {
			t.Errorf("WireLimit(%d) = %d, under the limit", c.max, got)
		}
	}
}

func TestValidCloseCode(t *testing.T) {
	valid := []int{1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4000, 4999}
	invalid := []int{0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535, -1}
	for _, c := range valid {
		if !ValidCloseCode(c) {
			t.Errorf("%d refused", c)
		}
	}
	for _, c := range invalid {
		if ValidCloseCode(c) {
			t.Errorf("%d allowed", c)
		}
	}
}

package wsframe

import (
	"bytes"
	"testing"

	"github.com/gobwas/ws"
)

// TestNext: frames split at every byte come out whole once their last
// byte is there, masked ones unmasked, and one over the limit is an error
// as soon as its header is.
func TestNext(t *testing.T) {
	var stream []byte
	want := [][]byte{[]byte("hello"), bytes.Repeat([]byte("x"), 300), {}, bytes.Repeat([]byte("y"), 70000)}
	for i, p := range want {
		if i%2 == 0 {
			stream = append(stream, ClientFrame(ws.OpText, p)...)
		} else {
			stream = AppendFrame(stream, 0, ws.OpText, p)
		}
	}
	for cut := 0; cut <= len(stream); cut += 97 {
		buf := append([]byte(nil), stream[:cut]...)
		var got [][]byte
		for {
			_, payload, n, err := Next(buf, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			got = append(got, append([]byte(nil), payload...))
			buf = buf[n:]
		}
		// What is left is the frame cut short; then the rest of the stream.
		buf = append(buf, stream[cut:]...)
		for len(buf) > 0 {
			_, payload, n, err := Next(buf, 1<<20)
			if err != nil || n == 0 {
				t.Fatalf("cut at %d: %v, %d of %d bytes left", cut, err, len(buf), len(stream))
			}
			got = append(got, append([]byte(nil), payload...))
			buf = buf[n:]
		}
		if len(got) != len(want) {
			t.Fatalf("cut at %d: %d frames, want %d", cut, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("cut at %d: frame %d differs", cut, i)
			}
		}
	}
	big := AppendHeader(nil, 0, ws.OpText, 2<<20)
	if _, _, _, err := Next(big, 1<<20); err == nil {
		t.Error("a 2 MiB frame's header under a 1 MiB limit: no error")
	}
}

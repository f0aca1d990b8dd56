package progress

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// Not a terminal: no bar, and nothing written.
func TestSilentOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, b := range []*Bar{Count(&buf, 10, "dial"), Timed(&buf, time.Second, "window"), Count(w, 10, "dial"), Timed(w, time.Second, "window")} {
		if b != nil {
			t.Errorf("a bar off a terminal: %+v", b)
		}
		b.Add(1)
		b.Done()
	}
	if buf.Len() > 0 {
		t.Errorf("wrote %q", buf.String())
	}
}

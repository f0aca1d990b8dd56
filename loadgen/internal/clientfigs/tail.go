package clientfigs

import "sync"

// TailSize is how much of each stream a Tail keeps: the figures are at
// the end of a tool's output (a last JSON line, a summary).
const TailSize = 4 << 20

// Tail is an io.Writer that keeps the last TailSize bytes written to it.
type Tail struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps p, dropping the oldest bytes beyond TailSize.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - TailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// Bytes returns a copy of what is kept.
func (t *Tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

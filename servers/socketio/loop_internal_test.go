package socketio

import (
	"net"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/config"
)

// free reports whether l can be taken at once, and gives it back.
func free(t *testing.T, l *loop) bool {
	t.Helper()
	got := make(chan *turn, 1)
	go func() { got <- l.acquire() }()
	select {
	case tn := <-got:
		tn.done()
		return true
	case <-time.After(2 * time.Second):
		l.stop() // let the waiter go
		return false
	}
}

// newTestConn is a frozenConn on l over one end of a pipe, the other end
// returned to write the client's bytes.
func newTestConn(l *loop) (*frozenConn, net.Conn) {
	server, client := net.Pipe()
	fc := &frozenConn{Conn: server, src: server, l: l, slot: &turnSlot{}, maxOutbox: 1 << 20,
		chunks: make(chan chunk, 1), closed: make(chan struct{})}
	go fc.pump()
	return fc, client
}

// TestFrozenConnCloseFreesTheLoop: an engine that closes a connection in
// the middle of a chunk and then stops reading (a session closed for a
// repeated CONNECT) leaves the loop free, whether the close comes before
// the next read or while that read waits for its turn.
func TestFrozenConnCloseFreesTheLoop(t *testing.T) {
	for _, model := range []string{config.BlockingAsyncio, config.BlockingNode} {
		t.Run(model+"/close then read", func(t *testing.T) {
			l := newLoop(model)
			fc, client := newTestConn(l)
			defer client.Close()
			go func() { _, _ = client.Write([]byte("4040404040")) }()
			buf := make([]byte, 2)
			if _, err := fc.Read(buf); err != nil {
				t.Fatal(err)
			}
			_ = fc.Close()
			if n, err := fc.Read(buf); err == nil {
				t.Errorf("a read after Close returned %d bytes", n)
			}
			if !free(t, l) {
				t.Error("the loop is still held after Close")
			}
		})
		t.Run(model+"/close while the read waits", func(t *testing.T) {
			l := newLoop(model)
			fc, client := newTestConn(l)
			defer client.Close()
			go func() { _, _ = client.Write([]byte("40")) }()
			other := l.acquire() // another connection's turn
			read := make(chan error, 1)
			go func() {
				_, err := fc.Read(make([]byte, 8))
				read <- err
			}()
			// The read is waiting for its turn once it is counted.
			for deadline := time.Now().Add(5 * time.Second); ; {
				l.mu.Lock()
				waiting := len(l.waiters)
				l.mu.Unlock()
				if waiting == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the read never waited for its turn")
				}
				time.Sleep(time.Millisecond)
			}
			_ = fc.Close()
			other.done()
			if err := <-read; err == nil {
				t.Error("a read that waited across Close returned bytes")
			}
			if !free(t, l) {
				t.Error("the loop is still held after Close")
			}
		})
	}
}

// TestSettleAtTheAnswer: a handshake is abandoned when its client left
// before its connect handler ended, and completed when the client leaves
// once the handler has ended, even while the settling still waits for its
// own barrier (a turn asked for after the ack was made): the ack, written
// under an earlier barrier, may have reached the client already.
func TestSettleAtTheAnswer(t *testing.T) {
	for _, leftFirst := range []bool{false, true} {
		l := newLoop(config.BlockingAsyncio)
		f := newFreezer(l, 1<<20, nil)
		slot := &turnSlot{}
		if leftFirst {
			slot.left.Store(true)
		}
		answered := make(chan struct{})
		var turns connectTurns[error]
		turns.take(l, slot, "/", func(error) { close(answered) }, func() {})
		<-answered

		later := l.acquire() // asked for between the ack and its settling
		settled := make(chan bool, 1)
		f.settle(slot, func(gone bool) { settled <- gone })
		slot.left.Store(true) // the client read its ack (or never did) and left
		later.done()
		if gone := <-settled; gone != leftFirst {
			t.Errorf("left before the handler ended %v: settled as gone %v", leftFirst, gone)
		}
	}
}

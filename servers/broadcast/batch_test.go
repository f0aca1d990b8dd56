package broadcast_test

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"knowngood/shared/lifecycle/lifecycletest"
)

// gatedListener's connections count the target's writes, and hold every
// write back while the gate is shut.
type gatedListener struct {
	net.Listener
	shut    atomic.Bool
	release chan struct{}
	writes  atomic.Int64
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, fmt.Errorf("accepted a %T, not a TCP connection", c)
	}
	return &gatedConn{TCPConn: tc, l: l}, nil
}

// gatedConn keeps *net.TCPConn's SyscallConn, as the target's own
// connections have it.
type gatedConn struct {
	*net.TCPConn
	l *gatedListener
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if c.l.shut.Load() {
		<-c.l.release
	}
	c.l.writes.Add(1)
	return c.TCPConn.Write(p)
}

// TestBacklogGoesOutTogether: on gorilla and coder, the messages queued
// for a connection while its writer is stuck go out in a few writes once
// it can write again, not one write each: a connection that fell behind
// catches up (gnet writes its queue with one writev).
func TestBacklogGoesOutTogether(t *testing.T) {
	const n = 40 // broadcasts: each queues the broadcast and its result
	for _, v := range variants[:2] {
		t.Run(v.name, func(t *testing.T) {
			gl := &gatedListener{release: make(chan struct{})}
			tg := lifecycletest.Start(t, v.name, v.build, lifecycletest.Options{Wrap: func(l net.Listener) net.Listener {
				gl.Listener = l
				return gl
			}})
			c, _, err := dialer(0).Dial(tg.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			gl.shut.Store(true)
			for i := range n {
				if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"broadcast","payload":%d}`, i)); err != nil {
					t.Fatal(err)
				}
			}
			lifecycletest.WaitFor(t, "the broadcasts to arrive", func() bool { return tg.Stats().MessagesReceived == n })
			time.Sleep(50 * time.Millisecond) // the last ones are queued
			before := gl.writes.Load()
			close(gl.release)

			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			results := 0
			for range 2 * n {
				_, msg, err := c.ReadMessage()
				if err != nil {
					t.Fatalf("after %d results: %v", results, err)
				}
				if strings.Contains(string(msg), "broadcastResult") {
					results++
				}
			}
			if results != n {
				t.Errorf("%d results, want %d", results, n)
			}
			w := gl.writes.Load() - before
			t.Logf("%d messages in %d writes", 2*n, w)
			if w > 8 {
				t.Errorf("%d messages took %d writes once the writer could write again, want a few", 2*n, w)
			}
		})
	}
}

package sioclient

import (
	"sync"
	"testing"
	"time"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// TestPauseWhilePollEnds races an upgrade's Pause against the end of the
// pending long-poll, as when the server's answer to the GET and its pong to
// the WebSocket probe arrive together. Whichever comes first, Pause must
// call back exactly once: when the GET's end fell between Pause's look at
// the pending GET and its wait for it, the transport stayed pausing for
// good, neither polling nor upgraded, and the server's later packets (a
// broadcast, the auth event of a test server) never arrived.
func TestPauseWhilePollEnds(t *testing.T) {
	const runs = 3000
	noop := "6" // an Engine.IO noop: the GET ends with nothing to deliver
	for i := range runs {
		g := newGate()
		g.finished = true // no request leaves: the test plays the server
		p := (&pollingCtor{gate: g}).New(engine.MakeSocketWithUpgrade(), engine.DefaultSocketOptions()).(*pollingTransport)
		p.OnOpen()
		p.mu.Lock()
		p.polling = true // the long-poll GET after the handshake
		p.mu.Unlock()

		var calls sync.WaitGroup
		paused := make(chan struct{}, 2)
		start := make(chan struct{})
		calls.Go(func() {
			<-start
			p.OnData(types.NewStringBufferString(noop))
		})
		calls.Go(func() {
			<-start
			p.Pause(func() { paused <- struct{}{} })
		})
		close(start)
		calls.Wait()
		// A GET that ended before Pause began polls again; that one ends too.
		p.mu.Lock()
		again := p.polling
		p.mu.Unlock()
		if again {
			p.OnData(types.NewStringBufferString(noop))
		}

		select {
		case <-paused:
		case <-time.After(2 * time.Second):
			t.Fatalf("run %d: Pause did not call back once the GET had ended (state %s)", i, p.ReadyState())
		}
		select {
		case <-paused:
			t.Fatalf("run %d: Pause called back twice", i)
		case <-time.After(time.Millisecond):
		}
	}
}

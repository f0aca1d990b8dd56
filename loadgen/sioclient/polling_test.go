package sioclient

import (
	"sync"
	"testing"
	"time"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/parsers/engine/v3/packet"
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

// TestWriteWhilePausing writes packets as the client's socket does when it
// took its buffer just before an upgrade began pausing the transport: its
// flush looks for an upgrade under way first, and the probe, on another
// goroutine, pauses the transport before the write. The base transport
// dropped such packets (an echo's ack then never came); they must go back
// to the front of the socket's buffer, for the new transport.
func TestWriteWhilePausing(t *testing.T) {
	g := newGate()
	g.finished = true // no request leaves: the test plays the server
	socket := engine.MakeSocketWithUpgrade()
	p := (&pollingCtor{gate: g}).New(socket, engine.DefaultSocketOptions()).(*pollingTransport)
	p.OnOpen()
	p.mu.Lock()
	p.polling = true // the long-poll GET after the handshake
	p.mu.Unlock()

	queued := &packet.Packet{Type: packet.MESSAGE, Data: types.NewStringBufferString("emitted after")}
	socket.WriteBuffer().Push(queued)
	paused := make(chan struct{})
	p.Pause(func() { close(paused) })
	caught := &packet.Packet{Type: packet.MESSAGE, Data: types.NewStringBufferString("taken before")}
	p.Send([]*packet.Packet{caught}) // pausing: the GET is still pending
	if got := socket.WriteBuffer().All(); len(got) != 2 || got[0] != caught || got[1] != queued {
		t.Fatalf("write buffer %v after a write while pausing, want the written packet first, then the one emitted after it", got)
	}

	p.OnData(types.NewStringBufferString("6")) // the GET ends: paused
	<-paused
	late := &packet.Packet{Type: packet.MESSAGE, Data: types.NewStringBufferString("late")}
	p.Send([]*packet.Packet{late}) // paused, the new transport not yet in place
	if got := socket.WriteBuffer().All(); len(got) != 3 || got[0] != late {
		t.Fatalf("write buffer %v after a write while paused, want %v first", got, late)
	}
	if p.writing {
		t.Error("a pausing transport posted the packets")
	}
}

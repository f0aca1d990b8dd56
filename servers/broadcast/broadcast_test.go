package broadcast_test

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestFanOut: 250 clients; 10 of them broadcast 3 messages each; every
// broadcast reaches every client exactly once, every listenerCount is
// 250, and the timed push arrives in seq order with no gap. The hub's
// fan-out is one pass over a flat list, the same at any size: 250 is
// enough members for the broadcasts and pushes to overlap, where 1,000
// per variant, side by side, starved a loaded machine into handshake
// timeouts.
func TestFanOut(t *testing.T) {
	t.Parallel()
	const n, senders, each = 250, 10, 3
	forEach(t, func(t *testing.T, name string, b lifecycletest.Build) {
		tg := start(t, name, b, func(c *config.Config) { c.Broadcast.PushInterval = 50 * time.Millisecond })
		clients := dialMany(t, tg.URL(), n)

		for s := range senders {
			for k := range each {
				clients[s].send(t, fmt.Sprintf(`{"type":"broadcast","payload":{"from":%d,"k":%d}}`, s, k))
			}
		}
		lifecycletest.WaitUpTo(t, 30*time.Second, "every broadcast at every client", func() bool {
			for _, cl := range clients {
				got := 0
				cl.view(func(cl *client) { got = len(cl.order) })
				if got < senders*each {
					return false
				}
			}
			return true
		})
		// Every client has now seen a few pushes too.
		lifecycletest.WaitUpTo(t, 30*time.Second, "three pushes at every client", func() bool {
			for _, cl := range clients {
				got := 0
				cl.view(func(cl *client) { got = len(cl.pushes) })
				if got < 3 {
					return false
				}
			}
			return true
		})

		for i, cl := range clients {
			cl.view(func(cl *client) {
				if len(cl.order) != senders*each || len(cl.broadcasts) != senders*each {
					t.Fatalf("client %d: %d broadcasts, %d distinct; want %d once each", i, len(cl.order), len(cl.broadcasts), senders*each)
				}
				for p, times := range cl.broadcasts {
					if times != 1 {
						t.Fatalf("client %d got %s %d times", i, p, times)
					}
				}
				for j := 1; j < len(cl.pushes); j++ {
					if cl.pushes[j] != cl.pushes[j-1]+1 {
						t.Fatalf("client %d: push seq %d after %d", i, cl.pushes[j], cl.pushes[j-1])
					}
				}
			})
		}
		for s := range senders {
			clients[s].view(func(cl *client) {
				if len(cl.results) != each {
					t.Fatalf("sender %d: %d broadcastResults, want %d", s, len(cl.results), each)
				}
				for _, r := range cl.results {
					if r.ListenerCount != n {
						t.Errorf("sender %d: listenerCount %d, want %d", s, r.ListenerCount, n)
					}
				}
				// Its own broadcasts come back in the order it sent them,
				// each before its result.
				var own []string
				for _, p := range cl.order {
					if strings.HasPrefix(p, fmt.Sprintf(`{"from":%d,`, s)) {
						own = append(own, p)
					}
				}
				for k, p := range own {
					if want := fmt.Sprintf(`{"from":%d,"k":%d}`, s, k); p != want {
						t.Errorf("sender %d: broadcast %d is %s, want %s", s, k, p, want)
					}
				}
			})
		}

		var wg sync.WaitGroup
		for _, cl := range clients {
			wg.Go(cl.bye)
		}
		wg.Wait()
		d := tg.Settled(t)
		if d.ConnectionsTotal != n || d.Disconnects["1000"] != n || d.BroadcastDropped != 0 {
			t.Errorf("stats: %d connections, disconnects %v, %d dropped; want %d, all 1000, none", d.ConnectionsTotal, d.Disconnects, d.BroadcastDropped, n)
		}
		if want := uint64(n + senders*each); d.MessagesReceived != want {
			t.Errorf("messages received %d, want %d (one echo per client and the broadcasts)", d.MessagesReceived, want)
		}
	})
}

// TestProtocolErrors: malformed JSON and unknown types are answered with an
// error message and counted, and the connection goes on; echo comes back
// as it was sent.
func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b lifecycletest.Build) {
		tg := start(t, name, b, nil)
		cl := dial(t, tg.URL())
		for _, msg := range []string{`not json`, `{"type":1}`, `{"type":"subscribe"}`, `{"type":"echo","payload":{"a":[1,2,"ü"]}}`} {
			cl.send(t, msg)
		}
		cl.send(t, `{"type":"broadcast","payload":"still here"}`)
		lifecycletest.WaitFor(t, "the answers", func() bool {
			n := 0
			cl.view(func(cl *client) { n = len(cl.other) + len(cl.results) })
			return n == 5
		})
		cl.view(func(cl *client) {
			for i, want := range []string{"malformed JSON", "malformed JSON", `unknown message type "subscribe"`} {
				if m := cl.other[i]; m.Type != protocol.TypeError || !strings.Contains(m.Error, want) {
					t.Errorf("answer %d: %+v, want an error saying %q", i, m, want)
				}
			}
			if m := cl.other[3]; m.Type != protocol.TypeEcho || string(m.Payload) != `{"a":[1,2,"ü"]}` {
				t.Errorf("echo came back as %+v", m)
			}
			if len(cl.results) != 1 || cl.results[0].ListenerCount != 1 || string(cl.results[0].Payload) != `"still here"` {
				t.Errorf("broadcastResult: %+v", cl.results)
			}
		})
		cl.bye()
		d := tg.Settled(t)
		if d.InvalidMessages[protocol.InvalidJSON] != 2 || d.InvalidMessages[protocol.InvalidType] != 1 {
			t.Errorf("invalid messages counted %v, want 2 malformed_json and 1 unknown_type", d.InvalidMessages)
		}
	})
}

// slowSetup is a target with a small send queue, a client that does not
// read (its receive buffer shrunk so that it backs up early), and a healthy
// client that sends a blast of large broadcasts and reads everything. blast
// gets the number of broadcasts sent once the blast is over.
func slowSetup(t *testing.T, name string, b lifecycletest.Build, slow string) (tg *lifecycletest.Target, slowc, healthy *client, resume chan struct{}, blast <-chan int) {
	tg = start(t, name, b, func(c *config.Config) {
		c.Broadcast.SendQueue = 16
		c.Broadcast.Slow = slow
	})
	resume = make(chan struct{})
	c, _, err := dialer(4096).Dial(tg.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	slowc = newClient(t, c, resume)
	healthy = dial(t, tg.URL())
	healthy.joined(t)
	// The slow client's join: an echo it cannot read yet, so wait for
	// the server to have counted two members' connections and the echo.
	lifecycletest.WaitFor(t, "two connections", func() bool { return tg.Stats().ConnectionsActive == 2 })
	_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"echo","payload":"x"}`))
	lifecycletest.WaitFor(t, "the slow client's echo read by the server", func() bool { return tg.Stats().MessagesReceived == 2 })

	// Broadcasts of 8 KiB until the slow client's socket buffers and its
	// queue of 16 are full and the server drops (a few hundred: 3 MB; up
	// to 16 MB), then 200 more, all of them dropped for the slow client
	// while the healthy one must get them. Sent until the server says so
	// rather than a fixed 16 MB: the same check, in a fraction of the
	// messages. The sender keeps at most 4 in flight, so that its own
	// queue (2 messages per broadcast) never fills.
	const most, after = 2000, 200
	sent := make(chan int, 1)
	pad := strings.Repeat("p", 8<<10)
	go func() {
		end := most
		for k := 0; k < end; k++ {
			for healthy.resultCount() < k-4 {
				select {
				case <-healthy.done:
					sent <- -1
					return
				case <-time.After(100 * time.Microsecond):
				}
			}
			if healthy.c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"broadcast","payload":"%d-%s"}`, k, pad)) != nil {
				sent <- -1
				return
			}
			if end == most && tg.Stats().BroadcastDropped > 0 {
				end = min(most, k+1+after)
			}
		}
		sent <- end
	}()
	return tg, slowc, healthy, resume, sent
}

// allResults waits until the blast is over and the healthy client has
// every broadcastResult, and returns the number of broadcasts.
func allResults(t *testing.T, healthy *client, blast <-chan int) int {
	t.Helper()
	var n int
	select {
	case n = <-blast:
	case <-time.After(60 * time.Second):
		t.Fatal("the blast did not end")
	}
	if n < 0 {
		t.Fatal("the healthy client's connection ended during the blast")
	}
	lifecycletest.WaitUpTo(t, 60*time.Second, "the healthy client to get every broadcast", func() bool {
		return healthy.resultCount() == n
	})
	return n
}

// TestSlowDrop: a client that stops reading never holds up the others:
// the healthy client gets every broadcast, in order, while the slow one is
// still not reading; the slow one's messages are dropped and counted, and
// what it gets plus what was dropped is exactly what was sent.
func TestSlowDrop(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b lifecycletest.Build) {
		tg, slowc, healthy, resume, sent := slowSetup(t, name, b, "drop")
		blast := allResults(t, healthy, sent)
		healthy.view(func(cl *client) {
			if len(cl.order) != blast {
				t.Fatalf("healthy client: %d broadcasts, want %d", len(cl.order), blast)
			}
			for k, p := range cl.order {
				if !strings.HasPrefix(p, fmt.Sprintf(`"%d-`, k)) {
					t.Fatalf("healthy client: broadcast %d out of order", k)
				}
			}
			for _, r := range cl.results {
				if r.ListenerCount != 1 && r.ListenerCount != 2 {
					t.Fatalf("listenerCount %d, want 1 (slow client dropped) or 2", r.ListenerCount)
				}
			}
		})
		dropped := tg.Stats().BroadcastDropped
		if dropped == 0 {
			t.Fatal("no drop counted for a client that did not read 16 MB of broadcasts")
		}
		// Now the slow client reads what is left for it, and goes.
		close(resume)
		got := func() int {
			n := 0
			slowc.view(func(cl *client) { n = len(cl.order) })
			return n
		}
		lifecycletest.WaitUpTo(t, 30*time.Second, "the slow client to read what it was sent", func() bool {
			return uint64(got())+dropped == uint64(blast)
		})
		if tg.Stats().BroadcastDropped != dropped {
			t.Errorf("drops went on after the blast")
		}
		slowc.bye()
		healthy.bye()
		if d := tg.Settled(t); d.Disconnects["1000"] != 2 {
			t.Errorf("disconnects %v, want both 1000", d.Disconnects)
		}
	})
}

// TestSlowClose: with -slow close, the client that stops reading is closed
// with 1008 (it sees the close frame once it reads again); the healthy one
// gets everything.
func TestSlowClose(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b lifecycletest.Build) {
		tg, slowc, healthy, resume, sent := slowSetup(t, name, b, "close")
		// The server gives a client it closes 2 s to take the close frame:
		// read again as soon as it has decided.
		lifecycletest.WaitUpTo(t, 60*time.Second, "the slow client's queue to fill", func() bool { return tg.Stats().BroadcastDropped > 0 })
		// The 4 KiB receive buffer that let the queue fill would drain
		// what the server holds for it (megabytes) in hundreds of 8 KiB
		// round trips; on a loaded machine they outlast those 2 s.
		if tc, ok := slowc.c.UnderlyingConn().(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 20)
		}
		close(resume)
		select {
		case <-slowc.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow client was not closed")
		}
		slowc.view(func(cl *client) {
			if cl.closeCode != websocket.ClosePolicyViolation {
				t.Errorf("slow client closed with %d, want 1008", cl.closeCode)
			}
		})
		blast := allResults(t, healthy, sent)
		healthy.view(func(cl *client) {
			if len(cl.order) != blast {
				t.Errorf("healthy client: %d broadcasts, want %d", len(cl.order), blast)
			}
		})
		healthy.bye()
		d := tg.Settled(t)
		if d.Disconnects["1008"] != 1 || d.Disconnects["1000"] != 1 || d.BroadcastDropped == 0 {
			t.Errorf("disconnects %v, dropped %d: want one 1008, one 1000, drops counted", d.Disconnects, d.BroadcastDropped)
		}
	})
}

// TestChurn: clients join and leave while broadcasts go on: no panic, no
// leaked goroutine (TestMain), the clients that stay get every broadcast
// exactly once, and every connection is counted once.
func TestChurn(t *testing.T) {
	t.Parallel()
	const stay, churners, rounds, broadcasts = 20, 4, 25, 100
	forEach(t, func(t *testing.T, name string, b lifecycletest.Build) {
		tg := start(t, name, b, func(c *config.Config) { c.Broadcast.PushInterval = 10 * time.Millisecond })
		clients := dialMany(t, tg.URL(), stay)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range churners {
			wg.Go(func() {
				for range rounds {
					c, _, err := dialer(0).Dial(tg.URL(), nil)
					if err != nil {
						t.Error(err)
						return
					}
					_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"broadcast","payload":"churn"}`))
					time.Sleep(2 * time.Millisecond)
					_ = c.Close() // abruptly, half the time mid-broadcast
				}
			})
		}
		for k := range broadcasts {
			clients[0].send(t, fmt.Sprintf(`{"type":"broadcast","payload":%d}`, k))
		}
		wg.Wait()
		close(stop)
		lifecycletest.WaitUpTo(t, 30*time.Second, "every broadcastResult", func() bool {
			n := 0
			clients[0].view(func(cl *client) { n = len(cl.results) })
			return n == broadcasts
		})
		lifecycletest.WaitUpTo(t, 30*time.Second, "every numbered broadcast at every client", func() bool {
			for _, cl := range clients {
				ok := true
				cl.view(func(cl *client) {
					for k := range broadcasts {
						if cl.broadcasts[fmt.Sprint(k)] == 0 {
							ok = false
						}
					}
				})
				if !ok {
					return false
				}
			}
			return true
		})
		for i, cl := range clients {
			cl.view(func(cl *client) {
				for k := range broadcasts {
					if n := cl.broadcasts[fmt.Sprint(k)]; n != 1 {
						t.Errorf("client %d got broadcast %d %d times", i, k, n)
					}
				}
				for j := 1; j < len(cl.pushes); j++ {
					if cl.pushes[j] != cl.pushes[j-1]+1 {
						t.Errorf("client %d: push seq %d after %d", i, cl.pushes[j], cl.pushes[j-1])
					}
				}
			})
		}
		clients[0].view(func(cl *client) {
			for _, r := range cl.results {
				if r.ListenerCount < stay || r.ListenerCount > stay+churners {
					t.Errorf("listenerCount %d, want %d to %d", r.ListenerCount, stay, stay+churners)
				}
			}
		})
		for _, cl := range clients {
			cl.bye()
		}
		d := tg.Settled(t)
		var ended uint64
		for _, n := range d.Disconnects {
			ended += n
		}
		if want := uint64(stay + churners*rounds); d.ConnectionsTotal != want || ended != want || d.BroadcastDropped != 0 {
			t.Errorf("stats: %d connections, %d disconnects %v, %d dropped; want %d, %d, none", d.ConnectionsTotal, ended, d.Disconnects, d.BroadcastDropped, want, want)
		}
	})
}

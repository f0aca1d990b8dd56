package wsserver_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestFaultSwitch: the known-bad modes switched while the target serves
// (as POST /control/fault switches them), on every library, against
// gorilla clients: each change takes effect at the next handshake or
// message, on the connection open since the start too; a delay held
// back keeps its place when the delay is turned off; close-after counts
// from the change. The counts add up at the end.
func TestFaultSwitch(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, nil)
		f := tg.Faults()
		count := func(kind string) uint64 { return tg.Stats().Faults[kind] }
		old := dialWS(t, tg.URL()) // open before any change
		echoOnce(t, old, "start")

		// reject: a new handshake is refused with 503, the open
		// connection goes on.
		f.Set(faults.Modes{Reject: 1})
		if _, resp, err := websocket.DefaultDialer.Dial(tg.URL(), nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("reject on: dial %v, %v; want 503", resp, err)
		}
		echoOnce(t, old, "after reject")

		// drop: the message is dropped and counted; once off, the next
		// is the first thing back.
		f.Set(faults.Modes{Drop: 1})
		if err := old.WriteMessage(websocket.TextMessage, []byte("dropped")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the drop counted", func() bool { return count(faults.KindDrop) == 1 })
		f.Set(faults.Modes{})
		echoOnce(t, old, "after drop")

		// delay: the first delayed message of a connection opened without
		// one; a message sent once the delay is off comes after it.
		const delay = 100 * time.Millisecond
		f.Set(faults.Modes{Delay: delay})
		began := time.Now()
		if err := old.WriteMessage(websocket.TextMessage, []byte("delayed")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the delay counted", func() bool { return count(faults.KindDelay) == 1 })
		f.Set(faults.Modes{})
		if err := old.WriteMessage(websocket.TextMessage, []byte("behind")); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"delayed", "behind"} {
			if _, got, err := old.ReadMessage(); err != nil || string(got) != want {
				t.Fatalf("read %q, %v; want %q", got, err, want)
			}
		}
		if took := time.Since(began); took < delay*9/10 {
			t.Errorf("the delayed echo came back after %v, want at least %v", took, delay)
		}
		echoOnce(t, old, "undelayed")

		// close-after: counted from the change, on the old connection
		// (20 messages before) and on a new one alike.
		f.Set(faults.Modes{CloseAfter: 3})
		fresh := dialWS(t, tg.URL())
		for _, c := range []*websocket.Conn{old, fresh} {
			for i := range 3 {
				echoOnce(t, c, strconv.Itoa(i))
			}
			if _, got, err := c.ReadMessage(); !websocket.IsCloseError(err, faults.CloseCode) {
				t.Fatalf("after 3 echoes: %q, %v; want close %d", got, err, faults.CloseCode)
			}
		}

		// all off: normal again.
		f.Set(faults.Modes{})
		again := dialWS(t, tg.URL())
		for i := range 10 {
			echoOnce(t, again, strconv.Itoa(i))
		}
		again.Close()
		st := tg.Settled(t)
		check(t, "faults reject", st.Faults[faults.KindReject], 1)
		check(t, "faults drop", st.Faults[faults.KindDrop], 1)
		check(t, "faults delay", st.Faults[faults.KindDelay], 1)
		check(t, "faults close_after", st.Faults[faults.KindCloseAfter], 2)
		check(t, "handshakes rejected", st.Handshakes[protocol.ResultRejected], 1)
		check(t, "disconnects 1011", st.Disconnects["1011"], 2)
		// Every message counted, the one dropped unanswered.
		const received = 1 + 1 + 1 + 1 + 2 + 1 + 2*3 + 10
		check(t, "messages received", st.MessagesReceived, received)
		check(t, "messages sent", st.MessagesSent, received-1)
	})
}

// TestFaultSwitchRace: the modes switched again and again while a client
// pipelines messages: the echoes that come back are in the order sent,
// whatever was in force when each was read, and each message is echoed
// or counted dropped, once (run under -race).
func TestFaultSwitchRace(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, nil)
		f := tg.Faults()
		conn := dialWS(t, tg.URL())
		_ = conn.SetReadDeadline(time.Time{}) // the test's Cleanup closes it
		const n = 600
		var stop atomic.Bool
		switched := make(chan struct{})
		go func() {
			defer close(switched)
			modes := []faults.Modes{{Delay: time.Millisecond}, {Drop: 0.3}, {}, {Delay: 2 * time.Millisecond, Drop: 0.1}, {Reject: 1}}
			for i := 0; !stop.Load(); i++ {
				f.Set(modes[i%len(modes)])
				time.Sleep(time.Millisecond) // a pace for the switches, not an order
			}
			f.Set(faults.Modes{})
		}()
		go func() {
			for i := range n {
				if conn.WriteMessage(websocket.TextMessage, []byte(strconv.Itoa(i))) != nil {
					return
				}
			}
		}()
		echoes := make(chan int, n+1)
		go func() {
			for {
				_, got, err := conn.ReadMessage()
				if err != nil {
					close(echoes)
					return
				}
				i, _ := strconv.Atoi(string(got))
				echoes <- i
			}
		}()
		last, got := -1, 0
		drops := func() uint64 { return tg.Stats().Faults[faults.KindDrop] }
		deadline := time.After(30 * time.Second)
		for uint64(got)+drops() < n {
			select {
			case i, ok := <-echoes:
				if !ok {
					t.Fatalf("the connection ended after %d echoes", got)
				}
				if i <= last {
					t.Fatalf("echo %d after echo %d: out of order", i, last)
				}
				last = i
				got++
			case <-time.After(5 * time.Millisecond):
			case <-deadline:
				t.Fatalf("after 30s, %d echoed and %d dropped of %d", got, drops(), n)
			}
		}
		stop.Store(true)
		<-switched
		check(t, "echoed + dropped", uint64(got)+drops(), n)
		t.Logf("%d of %d echoed, %d dropped", got, n, drops())
	})
}

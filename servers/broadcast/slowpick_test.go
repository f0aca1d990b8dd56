package broadcast_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/config"
)

// TestSlowCloseFindsTheNonReader: with -slow close and a queue of two, a
// client that never reads is closed with 1008, and the client that sends
// the broadcasts (and so gets two messages for each: its copy and its
// result) is not, although it keeps two broadcasts in flight. The sender's
// copy and result are one queue entry, so its queue holds at most its two
// broadcasts' entries however late its writer runs: nothing here depends
// on timing.
func TestSlowCloseFindsTheNonReader(t *testing.T) {
	t.Parallel()
	const window, most = 2, 20000
	forEach(t, func(t *testing.T, name string, b lifecycletest.Build) {
		tg := start(t, name, b, func(c *config.Config) {
			c.Broadcast.SendQueue = 2
			c.Broadcast.Slow = "close"
		})
		c, _, err := dialer(4096).Dial(tg.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		newClient(t, c, make(chan struct{})) // never reads
		sender := dial(t, tg.URL())
		sender.joined(t)
		lifecycletest.WaitFor(t, "two connections", func() bool { return tg.Stats().ConnectionsActive == 2 })

		// Broadcasts of 8 KiB, two in flight, until the non-reader's
		// queue is full: its socket buffers hold a few hundred.
		pad := strings.Repeat("p", 8<<10)
		sent := 0
		broadcast := func() {
			for sender.resultCount() < sent-window+1 {
				select {
				case <-sender.done:
					sender.view(func(cl *client) {
						t.Fatalf("the sender was closed (code %d) after %d broadcasts, %d results", cl.closeCode, sent, len(cl.results))
					})
				case <-time.After(100 * time.Microsecond):
				}
			}
			sender.send(t, fmt.Sprintf(`{"type":"broadcast","payload":"%d-%s"}`, sent, pad))
			sent++
		}
		for tg.Stats().BroadcastDropped == 0 {
			if sent == most {
				t.Fatalf("%d broadcasts and the non-reader's queue never filled", sent)
			}
			broadcast()
		}
		t.Logf("the non-reader's queue filled after %d broadcasts", sent)
		// The non-reader does not answer the close: the server drops it
		// after waiting 2 s, with 1008 as its reason.
		lifecycletest.WaitUpTo(t, 30*time.Second, "the non-reader to be closed", func() bool { return tg.Stats().ConnectionsActive == 1 })
		broadcast()
		lifecycletest.WaitUpTo(t, 30*time.Second, "every broadcastResult", func() bool { return sender.resultCount() == sent })
		sender.view(func(cl *client) {
			if cl.closeCode != 0 {
				t.Fatalf("the sender was closed with %d", cl.closeCode)
			}
			if last := cl.results[sent-1]; last.ListenerCount != 1 {
				t.Errorf("listenerCount %d once the non-reader was closed, want 1", last.ListenerCount)
			}
		})
		sender.bye()
		d := tg.Settled(t)
		if d.Disconnects["1008"] != 1 || d.Disconnects["1000"] != 1 {
			t.Errorf("disconnects %v, want the non-reader's 1008 and the sender's 1000", d.Disconnects)
		}
	})
}

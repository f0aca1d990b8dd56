package broadcast_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/servers/variants"
)

// TestBacklogGoesOutTogether: on gorilla and coder, the messages queued
// for a connection while its writer is stuck go out in a few writes once
// it can write again, not one write each: a connection that fell behind
// catches up (gnet writes its queue with one writev). It runs alone, the
// targets one after the other: how many writes the backlog takes depends
// on how soon the writer runs again once released.
func TestBacklogGoesOutTogether(t *testing.T) {
	const n = 40 // broadcasts: each queues the broadcast and its result
	for _, v := range broadcastTargets(variants.OnNetHTTP) {
		t.Run(v.name, func(t *testing.T) {
			tg, c, writes := startHeld(t, v)
			for i := range n {
				if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"broadcast","payload":%d}`, i)); err != nil {
					t.Fatal(err)
				}
			}
			// The reader handles one message at a time: once it has read
			// the echo behind them, every broadcast has been queued.
			if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"echo","payload":"last"}`)); err != nil {
				t.Fatal(err)
			}
			lifecycletest.WaitFor(t, "the broadcasts and the echo to arrive", func() bool { return tg.Stats().MessagesReceived == n+1 })
			before := writes.Count()
			writes.Release()

			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			results := 0
			for range 2*n + 1 {
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
			w := writes.Count() - before
			t.Logf("%d messages in %d writes", 2*n+1, w)
			if w > 8 {
				t.Errorf("%d messages took %d writes once the writer could write again, want a few", 2*n+1, w)
			}
		})
	}
}

// TestReaderOutlivesStuckWriter: a client that does not read holds up its
// own writer, never its reader. With the writer stuck in a write, every
// message the client sends is still read and counted. Not on a library
// whose write holds up its reader (the registry says which).
func TestReaderOutlivesStuckWriter(t *testing.T) {
	t.Parallel()
	const n = 10 // messages sent once the writer is stuck
	for _, v := range broadcastTargets(variants.OnNetHTTP, variants.ReadsWhileWriting) {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			tg, c, writes := startHeld(t, v)
			// A broadcast over the writer's 64 KiB batch: the writer
			// writes it at once, and stays in that write.
			big := fmt.Appendf(nil, `{"type":"broadcast","payload":%q}`, strings.Repeat("x", 20<<10))
			if err := c.WriteMessage(websocket.TextMessage, big); err != nil {
				t.Fatal(err)
			}
			lifecycletest.WaitFor(t, "the writer to be stuck in a write", func() bool { return writes.Waiting() > 0 })
			// One at a time, each read before the next is sent: the reader
			// goes back to the socket between them.
			for i := range n {
				if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"echo","payload":%d}`, i)); err != nil {
					t.Fatal(err)
				}
				lifecycletest.WaitFor(t, fmt.Sprintf("message %d to be read", i+2), func() bool { return tg.Stats().MessagesReceived == uint64(i+2) })
			}
		})
	}
}

// startHeld starts v with its writes watched, connects a client, and holds
// the target's writes from then on. The hold ends when the test does, so
// that a failed test does not leave the target's shutdown stuck.
func startHeld(t *testing.T, v broadcastTarget) (*lifecycletest.Target, *websocket.Conn, *lifecycletest.Writes) {
	t.Helper()
	writes := lifecycletest.NewWrites()
	tg := lifecycletest.Start(t, v.name, v.build, lifecycletest.Options{Wrap: writes.Wrap})
	c, _, err := dialer(0).Dial(tg.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	writes.Hold()
	t.Cleanup(writes.Release)
	return tg, c, writes
}

package socketio_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestFaultModes: each known-bad mode on a Socket.IO target against the Go
// client (through loadgen/sioclient), the client's count beside the
// server's faults_total.
func TestFaultModes(t *testing.T) { forWebSocket(t, testFaultModes) }

func testFaultModes(t *testing.T, engine string) {
	t.Run("reject", func(t *testing.T) {
		t.Parallel()
		tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.Faults.Reject = 0.3 })
		const n = 60
		refused := 0
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			c, err := sioclient.Connect(ctx, sioclient.Options{URL: tg.url, Transport: sioclient.WebSocket})
			cancel()
			if err != nil {
				refused++
				continue
			}
			_ = c.Close()
		}
		st := tg.metrics.Snapshot()
		if got := st.Faults[faults.KindReject]; got != uint64(refused) || st.Handshakes[protocol.ResultRejected] != uint64(refused) || refused == 0 || refused == n {
			t.Errorf("client refused %d of %d; server: %d reject faults, %d rejected handshakes", refused, n, got, st.Handshakes[protocol.ResultRejected])
		}
	})
	t.Run("delay", func(t *testing.T) {
		t.Parallel()
		const delay = 100 * time.Millisecond
		tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.Faults.Delay = delay })
		c := dial(t, tg.url, "/", []string{"websocket"}, nil)
		for range 3 {
			began := time.Now()
			if got := c.emitAck(t, "echo", "x"); len(got) != 1 || got[0] != "x" {
				t.Fatalf("ack %v", got)
			}
			if took := time.Since(began); took < delay*9/10 {
				t.Errorf("ack after %v, want at least -fault-delay %v", took, delay)
			}
		}
		if got := tg.metrics.Snapshot().Faults[faults.KindDelay]; got != 3 {
			t.Errorf("delay faults %d, want 3", got)
		}
	})
	t.Run("close-after", func(t *testing.T) {
		t.Parallel()
		tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.Faults.CloseAfter = 3 })
		c := dial(t, tg.url, "/", []string{"websocket"}, nil)
		for range 3 {
			c.emitAck(t, "echo", "x")
		}
		deadline := time.Now().Add(5 * time.Second)
		for c.reason() == "" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if c.reason() == "" {
			t.Fatal("not disconnected after -fault-close-after 3 events")
		}
		if got := tg.metrics.Snapshot().Faults[faults.KindCloseAfter]; got != 1 {
			t.Errorf("close_after faults %d, want 1", got)
		}
	})
	t.Run("drop", func(t *testing.T) {
		t.Parallel()
		tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.Faults.Drop = 0.5 })
		const n = 20
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := sioclient.Connect(ctx, sioclient.Options{URL: tg.url, Transport: sioclient.WebSocket})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		unanswered := 0
		for range n {
			// A dropped echo never comes: the server's drop count going up
			// says so, instead of a deadline a loaded machine can miss.
			if !answered(t, conn, func() uint64 { return tg.metrics.Snapshot().Faults[faults.KindDrop] }) {
				unanswered++
			}
		}
		if got := tg.metrics.Snapshot().Faults[faults.KindDrop]; got != uint64(unanswered) || unanswered == 0 || unanswered == n {
			t.Errorf("client: %d of %d echoes unanswered; server: %d drop faults", unanswered, n, got)
		}
	})
}

// TestFaultLeakTimers: -fault-leak-timers leaves a timer, holding 64 KiB,
// behind every namespace connect. It weighs the process's heap, so it runs
// alone: not parallel with any test (whose buffers, freed meanwhile, would
// hide the growth), nor across engines.
func TestFaultLeakTimers(t *testing.T) { inTurn(t, webSocketEngines, testFaultLeakTimers) }

func testFaultLeakTimers(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.Faults.LeakTimers = 10 * time.Millisecond })
	const n = 20
	before := heapAfterGC()
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := sioclient.Connect(ctx, sioclient.Options{URL: tg.url, Transport: sioclient.WebSocket})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	c := dial(t, tg.url, "/custom", []string{"websocket"}, nil)
	c.emitAck(t, "echo", "x")
	_ = c.Close()
	waitFor(t, "every connection closed", func() bool { return tg.metrics.Snapshot().ConnectionsActive == 0 })
	// One timer per namespace connect, none stopped with its
	// connection: the count stays once they are all gone.
	if got := tg.metrics.Snapshot().Faults[faults.KindLeakTimer]; got != n+1 {
		t.Errorf("leak_timer faults %d after %d connects, want %d", got, n+1, n+1)
	}
	// And each still holds its 64 KiB: the heap, collected, keeps them.
	// Three quarters of that is asked for: what the earlier tests
	// left (pooled buffers, the engine's own) may be freed meanwhile,
	// and with the timers stopped the heap would not grow at all.
	if grew := heapAfterGC() - before; grew < (n+1)*48<<10 {
		t.Errorf("heap grew %d bytes over %d closed connections, want at least 48 of their 64 KiB each", grew, n+1)
	}
}

// heapAfterGC is the live heap, in bytes, once collected.
func heapAfterGC() int {
	// Twice: what sync.Pools hold survives one collection.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int(ms.HeapAlloc)
}

// answered sends one echo and waits for its ack, or for drops() to go up
// (the server dropped it), or 10 s.
func answered(t *testing.T, conn *sioclient.Conn, drops func() uint64) bool {
	t.Helper()
	before := drops()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stop := make(chan struct{})
	dropped := make(chan struct{})
	go func() {
		defer close(dropped)
		for drops() == before {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
		cancel()
	}()
	err := conn.Echo(ctx, "x")
	close(stop)
	<-dropped
	switch {
	case err == nil:
		return true
	case drops() > before:
		return false
	}
	t.Fatalf("echo neither answered nor dropped: %v", err)
	return false
}

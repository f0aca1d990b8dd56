package echo_test

import (
	"io"
	"runtime"
	"testing"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/wstest"
)

// TestAllocations: echoing a message allocates nothing the library lets us
// avoid: at most the registry's figure for its library (gorilla allocates
// one small reader per message itself; coder and gnet nothing, nbio four of its own). A
// variant on a library not in the registry fails. The client here allocates nothing per message either, so
// the process's malloc count is the server's. Under -race sync.Pool drops
// a quarter of what it is given, so the bound is looser there.
func TestAllocations(t *testing.T) {
	forEach(t, func(t *testing.T, name string, b build) {
		v, _ := variants.Lookup(name)
		lib, ok := variants.LookupWebSocketLibrary(v.Library)
		if !ok {
			t.Fatalf("library %q is not in the registry of WebSocket libraries", v.Library)
		}
		allowed := lib.Goals.EchoAllocs
		tg := start(t, name, b, nil)
		conn, br := wstest.Upgraded(t, tg.Addr)
		frame, err := ws.CompileFrame(ws.MaskFrame(ws.NewBinaryFrame(wstest.Payload(128))))
		if err != nil {
			t.Fatal(err)
		}
		echo := make([]byte, 2+128)
		echoN := func(n int) {
			for range n {
				if _, err := conn.Write(frame); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(br, echo); err != nil {
					t.Fatal(err)
				}
			}
		}
		echoN(500) // warm the pools
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		const n = 3000
		echoN(n)
		runtime.ReadMemStats(&after)
		perMessage := float64(after.Mallocs-before.Mallocs) / n
		limit := allowed + 0.1
		if raceEnabled {
			// sync.Pool drops a quarter of what it is given under -race:
			// each pooled buffer a message takes may become an allocation,
			// and a library that allocates more per message (nbio) pools
			// more too (measured: nbio 5.1 against 4 without -race).
			limit = allowed + 1 + allowed/4
		}
		t.Logf("%s: %.2f allocations per echoed message (limit %.1f)", name, perMessage, limit)
		if perMessage > limit {
			t.Errorf("%.2f allocations per echoed message, want at most %.1f", perMessage, limit)
		}
	})
}

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
// avoid. gorilla allocates one small reader per message itself; coder and
// gnet nothing. A variant on a library not in the table fails: its figure
// is measured and written down, not assumed to be 0. The client here allocates nothing per message either, so
// the process's malloc count is the server's. Under -race sync.Pool drops
// a quarter of what it is given, so the bound is looser there.
func TestAllocations(t *testing.T) {
	libraryAllocs := map[variants.Library]float64{variants.Gorilla: 1, variants.Coder: 0, variants.Gnet: 0}
	forEach(t, func(t *testing.T, name string, b build) {
		v, _ := variants.Lookup(name)
		allowed, ok := libraryAllocs[v.Library]
		if !ok {
			t.Fatalf("no allocation figure for library %q: measure it and add it to libraryAllocs", v.Library)
		}
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
			limit = allowed + 1
		}
		t.Logf("%s: %.2f allocations per echoed message (limit %.1f)", name, perMessage, limit)
		if perMessage > limit {
			t.Errorf("%.2f allocations per echoed message, want at most %.1f", perMessage, limit)
		}
	})
}

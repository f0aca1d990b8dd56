package echo_test

import (
	"bytes"
	"net/http"
	"runtime/pprof"
	"strings"
	"testing"

	"knowngood/servers/echo"
)

// TestGnetBurstLeavesFewWorkers: a burst of connections to echo-gnet all
// upgrade, and leave at most a few of gnet's pool workers behind. Each
// registration holds a worker until the loop has opened its connection,
// and the pool keeps an idle worker, with its stack, for 10 s: with the
// registrations unbounded, a burst left one idle worker per connection
// still waiting, hundreds of them, a large part of an idle connection's
// memory (README, bench-conns).
func TestGnetBurstLeavesFewWorkers(t *testing.T) {
	const (
		burst = 400
		// The target allows 16 registrations at once; the pool may start a
		// few more while its idle ones are being handed back.
		most = 24
	)
	before := antsWorkers(t) // idle ones from other tests, which the burst may reuse
	tg := start(t, "echo-gnet", echo.NewGnet, nil)
	conns := make([]*rawConn, burst)
	for i := range conns { // all requests out before any answer is read
		conns[i] = dialTCP(t, tg.Addr)
		conns[i].write([]byte(upgradeRequest()))
	}
	for i, rc := range conns {
		if resp := rc.response(); resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("connection %d: %s", i, resp.Status)
		}
	}
	if n := tg.stats().ConnectionsActive; n != burst {
		t.Fatalf("%d connections active, want %d", n, burst)
	}
	if n := antsWorkers(t); n-before > most {
		t.Errorf("%d of gnet's pool workers after a burst of %d connections (%d before), want at most %d more", n, burst, before, most)
	}
}

// antsWorkers counts the goroutines of gnet's worker pool, busy or idle.
func antsWorkers(t *testing.T) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	return strings.Count(b.String(), "ants/v2.(*goWorker).run.func1(")
}

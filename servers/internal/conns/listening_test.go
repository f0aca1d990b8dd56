package conns_test

import (
	"net"
	"sync"
	"testing"

	"github.com/knowngood/knowngood/servers/internal/conns"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// TestListening: Stop after Start hands back the listener, Stop before
// Start makes Start refuse, and when the two race one of them, never both,
// is left to close it.
func TestListening(t *testing.T) {
	var l conns.Listening
	if l.Stop() != nil || !l.Closing() {
		t.Fatal("Stop before Start: want nil and closing")
	}
	ln := listen(t)
	if l.Start(ln) {
		t.Fatal("Start after Stop: want false")
	}

	var l2 conns.Listening
	if !l2.Start(ln) || l2.Closing() {
		t.Fatal("Start first: want true, not closing")
	}
	if l2.Stop() != ln {
		t.Fatal("Stop after Start: want the listener")
	}

	for range 200 {
		var l3 conns.Listening
		var started bool
		var stopped net.Listener
		var wg sync.WaitGroup
		wg.Go(func() { started = l3.Start(ln) })
		wg.Go(func() { stopped = l3.Stop() })
		wg.Wait()
		// Whichever came second closes the listener: Serve when Start
		// refused, Shutdown when Stop returned it; never both, never
		// neither.
		if started != (stopped != nil) {
			t.Fatalf("Start %v, Stop returned %v", started, stopped)
		}
	}
}

package lifecycle

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// TestListenQueue: a listener that accepts nothing fills its accept queue
// (backlog 2: Linux holds one more, and handshakes completing at once on
// two cores may slip one past), and the connects past it are counted as
// the kernel drops them.
func TestListenQueue(t *testing.T) {
	ln, backlog, err := Listen("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	read := listenQueue(ln, backlog)
	if q := read(); q.Queued != 0 || q.Limit != 2 {
		t.Fatalf("before any connect: %+v; want 0 queued of 2", q)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var dials sync.WaitGroup
	defer dials.Wait()
	defer cancel()
	for range 20 {
		dials.Go(func() {
			var d net.Dialer
			if c, err := d.DialContext(ctx, "tcp", ln.Addr().String()); err == nil {
				<-ctx.Done() // held until the test ends: the queue stays full
				c.Close()
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		q := read()
		if q.Queued > q.Limit && q.Limit == 2 && q.Overflows > 0 && q.Drops >= q.Overflows {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 connects to a listener that accepts none: %+v; want more than 2 queued of 2, and overflows counted", q)
		}
		time.Sleep(20 * time.Millisecond) // polling the kernel's counts, which say nothing when they change
	}
}

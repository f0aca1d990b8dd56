// Package enroll hands dialled sockets to a gnet client's event loops, a
// few at a time.
package enroll

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/panjf2000/gnet/v2"
)

// Parallel is how many enrolls a Gate lets run at once. Each duplicates
// its socket before it closes the original, so it holds one descriptor
// more for a moment (proc.FileReserve keeps room for these); and each
// waits for the loop to open the connection. One at a time, a ramp waited
// one loop wake-up per connection, and beside a CPU hog on both cores
// that was seconds for a step of 100 connects; together, the loop opens
// the waiting ones in one wake-up.
const Parallel = 8

// Gate bounds the enrolls in progress; the zero value is ready.
type Gate struct {
	once  sync.Once
	slots chan struct{}
}

// Enroll hands c to cli's loops with ctx as its context: when it returns,
// the loop has run OnOpen, and c is closed (the loop holds a duplicate).
func (g *Gate) Enroll(cli *gnet.Client, c net.Conn, ctx any) (gnet.Conn, error) {
	g.once.Do(func() { g.slots = make(chan struct{}, Parallel) })
	g.slots <- struct{}{}
	gc, err := cli.EnrollContext(c, ctx)
	<-g.slots
	if err == nil && gc == nil {
		err = errors.New("not opened on the event loop")
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("gnet enroll: %w", err)
	}
	return gc, nil
}

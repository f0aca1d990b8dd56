package socketio

import (
	"strconv"

	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/servers/internal/control"
)

// pusher is the timed push of the Socket.IO targets (-push-interval): every
// interval, an event (-push-event) to every socket of the namespace "/",
// or with -push-rooms N to each of the rooms push-1 ... push-N that sockets
// join with the join event, each push numbered per room, so that a client
// that sees a gap in seq has lost one, and stamped with its send time, so
// that it can tell the push's latency, as the broadcast targets' push does.
// A replica pushes to its own sockets (-redis carries no push), so that
// each socket sees one replica's numbering. A tick missed because a push
// ran long is skipped, not made up.
type pusher struct {
	interval time.Duration
	rooms    []string // "" alone: every socket
	filler   string
	send     func(room string, seq uint64, filler string)

	stop chan struct{}
	once sync.Once
	done sync.WaitGroup
}

// PushRoom is the name of the i-th push room (from 1) with -push-rooms.
func PushRoom(i int) string { return "push-" + strconv.Itoa(i) }

func newPusher(interval time.Duration, size, rooms int, send func(room string, seq uint64, filler string)) *pusher {
	p := &pusher{interval: interval, filler: strings.Repeat("x", size), send: send, stop: make(chan struct{})}
	p.rooms = []string{""}
	if rooms > 0 {
		p.rooms = make([]string, rooms)
		for i := range p.rooms {
			p.rooms[i] = PushRoom(i + 1)
		}
	}
	return p
}

// start begins pushing.
func (p *pusher) start() {
	p.done.Go(func() {
		ticker := time.NewTicker(p.interval)
		defer ticker.Stop()
		for seq := uint64(1); ; seq++ {
			select {
			case <-p.stop:
				return
			case <-ticker.C:
			}
			for _, room := range p.rooms {
				p.send(room, seq, p.filler)
			}
		}
	})
}

// halt stops the push and waits for the one under way.
func (p *pusher) halt() {
	p.once.Do(func() { close(p.stop) })
	p.done.Wait()
}

// pushControl is the push a target runs now, started with -push-interval
// or POST /control/push, and replaced or stopped by the latter.
type pushControl struct {
	cfg  Options // -push-interval, -push-size, -push-rooms
	send func(room string, seq uint64, filler string)

	mu      sync.Mutex
	running *pusher // nil: off
	pushing control.Push
	halted  bool // Shutdown has begun
}

// SetPush starts, changes or stops the timed push (POST /control/push); a
// push started again numbers from 1, and the old one has ended before.
func (s *Server) SetPush(p control.Push) (control.Push, error) {
	c := &s.push
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.halted {
		return c.pushing, control.ErrStopped
	}
	if c.running != nil {
		c.running.halt()
		c.running = nil
	}
	c.pushing = control.Push{}
	if !p.On {
		return c.pushing, nil
	}
	p = p.Defaults(c.cfg.PushInterval, c.cfg.PushSize)
	c.running = newPusher(p.Interval, p.Size, c.cfg.PushRooms, c.send)
	c.running.start()
	c.pushing = p
	return p, nil
}

// shutdown stops the push for good.
func (c *pushControl) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.halted = true
	if c.running != nil {
		c.running.halt()
		c.running = nil
	}
}

package socketio

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/control"
)

// pusher is the timed push of the Socket.IO targets (-push-interval): every
// interval, an event (-push-event) to every socket of the namespace "/",
// or with -push-rooms N to each of the rooms push-1 ... push-N that sockets
// join with the join event, each push numbered per room, so that a client
// that sees a gap in seq has lost one, and stamped with its send time, so
// that it can tell the push's latency, as the broadcast targets' push does.
// Alone, a replica numbers its pushes itself; in a cluster (-redis) one
// replica at a time pushes to every replica's sockets, numbered by Redis
// (lease), so that a socket sees one numbering whichever replica it is on.
// A tick missed because a push ran long is skipped, not made up.
type pusher struct {
	interval time.Duration
	rooms    []string // "" alone: every socket
	filler   string
	send     func(room string, seq uint64, filler string)
	// number, in a cluster, gives each tick's seq; false: this replica
	// does not push this tick.
	number func() (uint64, bool)

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
			if p.number != nil {
				var mine bool
				if seq, mine = p.number(); !mine {
					continue
				}
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
	// lease, in a cluster, numbers the pushes of one interval.
	lease func(interval time.Duration) func() (uint64, bool)

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
	if c.lease != nil {
		c.running.number = c.lease(p.Interval)
	}
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

// leaseScript takes or renews the cluster's push lease and, for its
// holder, numbers the next push. KEYS: lease, seq. ARGV: replica id,
// lease in ms. Returns the seq, or 0 when another replica holds the lease.
var leaseScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return redis.call('INCR', KEYS[2])
`)

// clusterLease numbers a cluster's pushes of event on r: each tick every
// replica asks; the holder of the lease (renewed at each of its ticks,
// held for three intervals) pushes, with the next seq of the cluster's
// counter. When the holder stops, another takes the lease once it lapses:
// the clients see a pause, not a gap. While Redis does not answer, no
// replica pushes (logged once per outage); the counter in Redis outlives
// a replica and a push stopped and started again, not a Redis restart.
//
// Numbering and broadcasting are two steps here (the broadcast goes
// through the adapter, in @socket.io/redis-adapter's format, which a
// script cannot write as the broadcast bus's lease script writes its
// own): a holder stalled between them for longer than the lease could
// deliver seq N after its successor's N+1, which a client counts as one
// push out of order.
func clusterLease(r *cluster.Redis, event string, log *slog.Logger) func(time.Duration) func() (uint64, bool) {
	keys := []string{"knowngood:push:" + event + ":lease", "knowngood:push:" + event + ":seq"}
	return func(interval time.Duration) func() (uint64, bool) {
		hold := max(3*interval, 100*time.Millisecond).Milliseconds()
		var down bool
		return func() (uint64, bool) {
			ctx, cancel := context.WithTimeout(context.Background(), max(interval, time.Second))
			defer cancel()
			seq, err := leaseScript.Run(ctx, r.Client, keys, r.ID, hold).Uint64()
			if err != nil {
				if !down {
					log.Warn("push: Redis did not answer the lease; no replica pushes until it does", "err", err)
				}
				down = true
				return 0, false
			}
			down = false
			return seq, seq > 0
		}
	}
}

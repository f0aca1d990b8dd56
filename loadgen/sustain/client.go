package sustain

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// client is one simulated user: one connection at a time, and again
// after a back-off when it is lost. Its emits come one after another from
// the run's pacer: the next one is set when the last one has gone out,
// whether or not its ack has come (the user does not wait either).
type client struct {
	id   int
	room string
	r    *run

	mu       sync.Mutex
	conn     link
	gen      int         // counts connections, so that a stale timer or event does nothing
	leaving  bool        // the client closes its connection itself (churn, the end)
	failures int         // connects failed in a row, for the back-off
	timer    *time.Timer // the back-off's before the next connect
	ever     bool        // it has been connected once
	// dropped: the connection of this gen ended before dial registered
	// it (the server closed it just after the CONNECT ack); dial then
	// counts it lost at once instead of holding a dead connection.
	dropped bool
	seq     int
}

// dial is one connect attempt, on a dialer goroutine: at most -inflight
// run at once.
func (c *client) dial(ctx context.Context) {
	r := c.r
	c.mu.Lock()
	c.gen++
	gen := c.gen
	c.leaving, c.dropped = false, false
	c.mu.Unlock()
	r.counts.attempts.Add(1)
	dctx, cancel := context.WithTimeout(ctx, r.cfg.Deadline)
	conn, err := r.dial(dctx, c.id, func() { c.onDisconnect(gen) })
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.counts.failed(errorKey(err))
		}
		c.retry(gen)
		return
	}
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		go conn.close()
		return
	}
	if c.ever {
		r.counts.reconnected.Add(1)
	}
	c.ever = true
	r.counts.connected.Add(1)
	c.conn, c.failures = conn, 0
	dropped := c.dropped
	c.mu.Unlock()
	r.held.Add(1)
	if dropped {
		c.onDisconnect(gen)
		return
	}
	if r.stopping.Load() {
		// Connected after the last step: it counts, sends nothing, and
		// is closed with the others, not at once, which a target could
		// count as a client gone before its ack.
		return
	}
	_ = conn.emit("join", c.room)
	r.counts.joins.Add(1)
	c.schedule(gen)
}

// schedule sets the next emit of connection gen; emit drops it if the
// connection has ended by then.
func (c *client) schedule(gen int) {
	r := c.r
	span := r.cfg.EmitMax - r.cfg.EmitMin
	wait := r.cfg.EmitMin
	if span > 0 {
		wait += rand.N(span)
	}
	r.pacer.after(wait, c, gen)
}

// emit sends one event with an ack and times the ack.
func (c *client) emit(gen int) {
	r := c.r
	c.mu.Lock()
	if c.gen != gen || c.conn == nil || r.stopping.Load() {
		c.mu.Unlock()
		return
	}
	c.seq++
	payload := c.room + ":" + strconv.Itoa(c.id) + ":" + strconv.Itoa(c.seq)
	conn := c.conn
	c.mu.Unlock()
	t0 := time.Now()
	var ask any
	if r.cfg.Hops {
		ask = askStamps(t0)
	}
	r.counts.emits.Add(1)
	conn.emitWithAck(r.cfg.Event, payload, ask, func(arg string, echoed any, err error) {
		if err == nil && arg != payload {
			err = errors.New("ack without the payload")
		}
		arrival := time.Now()
		r.onAck(arrival.Sub(t0), err)
		if err == nil && ask != nil {
			r.emitHops.record(stampsOf(echoed), arrival)
		}
	})
	c.schedule(gen)
}

// onDisconnect: a connection the client did not close is lost; the
// client connects again after a back-off.
func (c *client) onDisconnect(gen int) {
	r := c.r
	c.mu.Lock()
	if c.gen == gen && c.conn == nil {
		c.dropped = true // dial has not registered it yet
	}
	if c.gen != gen || c.conn == nil {
		c.mu.Unlock()
		return
	}
	conn, leaving := c.conn, c.leaving
	c.conn = nil
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	r.held.Add(-1)
	go conn.close()
	if leaving || r.stopping.Load() {
		return
	}
	r.counts.lost.Add(1)
	c.retry(gen)
}

// retry queues the next connect after the back-off: -backoff doubled for
// every failure in a row, at most -backoff-max, each wait drawn from the
// upper half of that ("equal jitter"), so that the clients of a replica
// that went away do not all come back at once.
func (c *client) retry(gen int) {
	r := c.r
	if !r.cfg.Reconnect || r.stopping.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	d := r.cfg.Backoff << min(c.failures, 20)
	d = min(d, r.cfg.BackoffMax)
	c.failures++
	wait := d/2 + rand.N(d/2+1)
	c.timer = time.AfterFunc(wait, func() { r.enqueue(c) })
}

// leave closes the client's connection on purpose (churn, the end of the
// run): it is not counted as lost.
func (c *client) leave() link {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaving = true
	if c.timer != nil {
		c.timer.Stop()
	}
	conn := c.conn
	if conn != nil {
		c.conn = nil
		c.gen++ // its disconnect event is stale now
		c.r.held.Add(-1)
	}
	return conn
}

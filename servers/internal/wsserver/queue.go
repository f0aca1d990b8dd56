package wsserver

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/knowngood/knowngood/shared/metrics"
)

// httpPeer is a gorilla or coder connection as its handler sees it. With a
// queue, one writer goroutine drains it, so that a client that does not
// read holds up only its own writer, never the goroutine that enqueued.
type httpPeer struct {
	t   *httpTarget
	ws  wsConn
	raw *trackedConn
	m   *metrics.Metrics

	queue  chan *Outgoing // nil without Options.Queue
	done   chan struct{}  // closed when the connection ends or closes
	closed atomic.Bool    // Close was called or the connection ended
	once   sync.Once
	writer sync.WaitGroup

	pinger   *time.Timer
	halfOpen atomic.Bool // the client answered no ping: the connection was dropped

	// The reader's own (readerSession): the handler's session, and the
	// known-bad modes' state, nil until a mode first meets a message.
	session Session
	faults  *connFaults
}

func newHTTPPeer(t *httpTarget, ws wsConn, raw *trackedConn) *httpPeer {
	p := &httpPeer{t: t, ws: ws, raw: raw, m: t.m, done: make(chan struct{})}
	// Replies from the reader are held back and sent together; a queued
	// connection's writer sends as soon as it can. The reader counts its
	// messages and replies in batches until -fault-delay has another
	// goroutine reply (newDelayer).
	raw.coalesce = t.opts.Queue == 0
	raw.m, raw.batchCounts = t.m, raw.coalesce
	if t.opts.Queue > 0 {
		p.queue = make(chan *Outgoing, t.opts.Queue)
	}
	return p
}

// readerSession is the connection as its library's reader hands it the
// messages: the known-bad modes in force applied, then the handler's
// session. It is the peer's own memory, so that serving it costs no
// allocation; with every mode off it costs one atomic load per message.
type readerSession httpPeer

func (r *readerSession) Message(op Op, data []byte) {
	p := (*httpPeer)(r)
	if p.faults == nil {
		if !p.t.faults.On() {
			p.session.Message(op, data)
			return
		}
		p.faults = new(connFaults)
	}
	faultMessage(p.t.faults, p.faults, p, p.session, op, data)
}

// Closed runs once the read loop is over: the session's end, then the
// delayed deliveries' (which may still be running one).
func (r *readerSession) Closed() {
	p := (*httpPeer)(r)
	p.session.Closed()
	stopFaults(p.faults)
}

// newDelayer makes the goroutine that delivers the delayed messages: from
// now on it, not the reader, writes the replies. The counts go straight
// to the metrics from now on, as a queued connection's do: batched by the
// reader, a reply's count would wait for the reader's next read. Set
// before the goroutine starts, which alone reads it besides the reader.
func (p *httpPeer) newDelayer() delayer {
	p.raw.batchCounts = false
	p.raw.flushCounts()
	return newDelayQueue()
}

// startWriter starts the connection's one writer, once the 101 is out:
// what was queued before waits for it.
func (p *httpPeer) startWriter() {
	if p.queue != nil {
		p.writer.Go(p.write)
	}
}

// Reply writes from the reader, or through the queue when there is one
// (one writer per connection).
func (p *httpPeer) Reply(op Op, data []byte) {
	if p.queue != nil {
		_ = p.Enqueue(NewOutgoing(append([]byte(nil), data...)))
		return
	}
	if p.ws.write(op, data) == nil {
		p.raw.sent(len(data))
	}
	// A failed write ends the connection: the next read fails too.
}

func (p *httpPeer) Enqueue(o *Outgoing) error {
	if p.queue == nil || p.closed.Load() {
		return ErrClosing
	}
	select {
	case p.queue <- o:
		return nil
	default:
		return ErrQueueFull
	}
}

// write is the connection's one writer. It stops at the first failed
// write, when the server closes, or when the connection ends. The messages
// it finds queued behind the one it takes go out together, as gnet's
// flush writes its queue with one writev: a connection that has fallen
// behind catches up with a write per batch, not one per message.
func (p *httpPeer) write() {
	defer p.raw.flush() // a batch cut short, before the close frame
	for {
		select {
		case o := <-p.queue:
			if p.closed.Load() {
				return
			}
			if o.closeCode != 0 {
				_ = p.raw.flush()
				p.Close(o.closeCode)
				return
			}
			if len(p.queue) > 0 || o.then != nil {
				p.raw.batch()
			}
			for m := o; m != nil; m = m.then {
				if err := p.ws.write(Text, m.Data); err != nil {
					return
				}
				p.m.Sent(1, len(m.Data))
			}
			if len(p.queue) == 0 && p.raw.flush() != nil {
				return
			}
		case <-p.done:
			return
		}
	}
}

// closeAfterQueue closes with code once the writer has written what is
// queued now; without a queue (replies are written by the reader) at once.
func (p *httpPeer) closeAfterQueue(code int) {
	if p.queue == nil {
		p.Close(code)
		return
	}
	select {
	case p.queue <- &Outgoing{closeCode: code}:
	default:
		p.Close(code) // a full queue: the client is not reading anyway
	}
}

// Close drops the queue and starts the close; the writer's message in
// progress goes out first.
func (p *httpPeer) Close(code int) {
	if p.closed.Swap(true) {
		return
	}
	p.once.Do(func() { close(p.done) })
	p.t.closeAsync(p.ws, code)
}

// end runs when the read loop is over: it stops the writer and closes the
// TCP connection, which unblocks a write stuck on a client that does not
// read.
func (p *httpPeer) end() {
	p.closed.Store(true)
	if p.pinger != nil {
		p.pinger.Stop()
	}
	p.once.Do(func() { close(p.done) })
	p.raw.flushCounts()
	// The last replies and the answer to the client's close, if held.
	_ = p.raw.SetWriteDeadline(time.Now().Add(closeWait))
	_ = p.raw.flush()
	_ = p.raw.Close()
	p.writer.Wait()
}

// keepalive finds half-open connections (a client whose machine died or
// whose network went, which TCP alone notices only after many minutes):
// every -ping-interval without a sign of life the server pings, and a
// client that sends nothing at all, pong or message, within -ping-timeout
// is dropped and counted as ping_timeout. Any byte read counts as a sign of
// life, so a busy connection costs nothing but the timer.
func (p *httpPeer) keepalive(interval, timeout time.Duration) {
	var mark uint32
	waiting := false
	p.pinger = time.AfterFunc(time.Hour, func() {
		if p.closed.Load() {
			return
		}
		switch {
		case !waiting && p.raw.read.Load() != mark:
			// Alive since the last look: look again later.
			mark = p.raw.read.Load()
			p.pinger.Reset(interval)
		case !waiting:
			waiting = true
			began := time.Now()
			_ = p.ws.ping(timeout)
			p.pinger.Reset(max(timeout-time.Since(began), 0))
		case p.raw.read.Load() == mark:
			p.halfOpen.Store(true)
			_ = p.raw.Close()
		default:
			waiting = false
			mark = p.raw.read.Load()
			p.pinger.Reset(interval)
		}
	})
	mark = p.raw.read.Load()
	p.pinger.Reset(interval)
}

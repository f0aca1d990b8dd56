package wsserver

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// sendQueue holds the frames not handed to gnet yet (Enqueue, flush), the
// queue entries they make (a Pair is one entry of two frames), the
// payload bytes they carry, whether a flush is scheduled on the loop, and
// the slice the last flush used (reused, not reallocated).
type sendQueue struct {
	mu       sync.Mutex
	frames   [][]byte
	entries  int
	spare    [][]byte
	bytes    int
	flushing bool
	// outbound, read by Enqueue from other goroutines: the bytes gnet
	// holds for a client that does not read.
	outbound atomic.Int64
}

// Enqueue puts a message on the connection's send queue, which its loop
// (the one writer) empties. The queue is the connection's own, not gnet's
// task queue: gnet runs Execute's tasks out of order when many are waiting.
// gnet's outbound buffer, which grows without end for a client that does
// not read, counts against the bound too, in messages of this size.
func (st *gconn) Enqueue(o *Outgoing) error {
	q := st.loop.g.opts.Queue
	if q <= 0 {
		return ErrClosing // not a queued target
	}
	sq := st.outQueue()
	frame := o.frameFor(st.rd.Deflate)
	var then []byte
	if o.then != nil {
		then = o.then.frameFor(st.rd.Deflate)
	}
	sq.mu.Lock()
	switch {
	case st.shut.Load():
		sq.mu.Unlock()
		return ErrClosing
	case sq.entries >= q || sq.outbound.Load() > int64(q)*int64(len(frame)+len(then)):
		sq.mu.Unlock()
		return ErrQueueFull
	}
	sq.entries++
	sq.frames = append(sq.frames, frame)
	sq.bytes += len(o.Data)
	if then != nil {
		sq.frames = append(sq.frames, then)
		sq.bytes += len(o.then.Data)
	}
	schedule := !sq.flushing
	sq.flushing = true
	sq.mu.Unlock()
	if !schedule {
		return nil
	}
	if st.loop.flusher.add(st) != nil {
		return ErrClosing // the engine is shutting down
	}
	return nil
}

// flushChunk is how many connections a loop flushes before it lets its
// other tasks (a registration, a close) run: a push to 5,000 connections
// of one loop takes it tens of milliseconds, which new connections would
// otherwise wait out.
const flushChunk = 128

// loopFlusher flushes the connections of one event loop that have
// something queued: one task on the loop for a fan-out, not one per
// connection (each of those is an allocation, a queue entry and, past
// gnet's 1,024 urgent tasks, a place in a queue that is drained 256 at a
// time, in front of the registrations of new connections).
type loopFlusher struct {
	g    *gnetTarget
	loop gnet.EventLoop

	mu        sync.Mutex
	dirty     []*gconn // to flush, added by Enqueue
	scheduled bool     // a Run is queued on the loop or running

	work []*gconn // the loop's own: being flushed, from next on
	next int
}

// add has st flushed on its loop soon.
func (f *loopFlusher) add(st *gconn) error {
	f.mu.Lock()
	f.dirty = append(f.dirty, st)
	start := !f.scheduled
	f.scheduled = true
	f.mu.Unlock()
	if !start {
		return nil
	}
	return f.schedule()
}

func (f *loopFlusher) schedule() error {
	if err := f.loop.Execute(context.Background(), f); err != nil {
		f.mu.Lock()
		f.scheduled = false
		clear(f.dirty)
		f.dirty = f.dirty[:0]
		f.mu.Unlock()
		return err
	}
	return nil
}

// Run, on the loop, flushes up to flushChunk connections, counts what
// went out once for all of them, and queues itself again while any are
// left.
func (f *loopFlusher) Run(context.Context) error {
	defer func() {
		if v := recover(); v != nil {
			conns.LogPanic(f.g.log, f.g.cfg.Name, v)
		}
	}()
	f.mu.Lock()
	f.work = append(f.work, f.dirty...)
	clear(f.dirty)
	f.dirty = f.dirty[:0]
	f.mu.Unlock()
	end := min(f.next+flushChunk, len(f.work))
	sent, bytes := 0, 0
	for _, st := range f.work[f.next:end] {
		n, b := st.flushQueued()
		sent += n
		bytes += b
	}
	f.g.m.Sent(sent, bytes)
	clear(f.work[f.next:end])
	f.next = end
	if f.next == len(f.work) {
		f.work, f.next = f.work[:0], 0
		f.mu.Lock()
		idle := len(f.dirty) == 0
		if idle {
			f.scheduled = false
		}
		f.mu.Unlock()
		if idle {
			return nil
		}
	}
	_ = f.schedule()
	return nil
}

// maxIovec is Linux's IOV_MAX: writev refuses more buffers at once (and
// gnet would close the connection over it).
const maxIovec = 1024

// outQueue is st's send queue, made on first use; any goroutine.
func (st *gconn) outQueue() *sendQueue {
	if sq := st.queue.Load(); sq != nil {
		return sq
	}
	if sq := new(sendQueue); st.queue.CompareAndSwap(nil, sq) {
		return sq
	}
	return st.queue.Load()
}

// flush writes everything queued, in order, on the loop: one writev per
// 1,024 messages.
func (st *gconn) flush() {
	if n, bytes := st.flushQueued(); n > 0 {
		st.loop.g.m.Sent(n, bytes)
	}
}

// flushQueued is flush, saying what it wrote (messages, payload bytes)
// for the caller to count.
func (st *gconn) flushQueued() (int, int) {
	sq := st.queue.Load()
	if sq == nil {
		return 0, 0 // nothing was ever queued
	}
	sq.mu.Lock()
	frames, n, bytes := sq.frames, len(sq.frames), sq.bytes
	sq.frames, sq.spare = sq.spare[:0], frames
	sq.bytes, sq.entries = 0, 0
	sq.flushing = false
	sq.mu.Unlock()
	defer clear(frames) // the frames belong to their Outgoing, not to us
	if st.phase != phaseOpen || n == 0 {
		return 0, 0 // closing or closed: nothing may follow the close frame
	}
	for rest := frames; len(rest) > 0; {
		k := min(len(rest), maxIovec)
		if _, _ = st.conn.Writev(rest[:k]); st.phase == phaseClosed {
			return 0, 0
		}
		rest = rest[k:]
	}
	sq.outbound.Store(int64(st.conn.OutboundBuffered()))
	return n, bytes
}

// frameFor is o as one unmasked text frame, compressed or not; made once
// for every connection o goes to.
func (o *Outgoing) frameFor(deflate bool) []byte {
	if !deflate {
		o.frameOnce.Do(func() { o.frame = wsframe.AppendFrame(nil, 0, ws.OpText, o.Data) })
		return o.frame
	}
	o.deflateOnce.Do(func() {
		d := wsframe.GetDeflater()
		defer wsframe.PutDeflater(d)
		z, err := d.Deflate(o.Data)
		if err != nil {
			// flate writing to memory does not fail; if it did, the
			// message goes uncompressed, which is valid.
			o.deflated = wsframe.AppendFrame(nil, 0, ws.OpText, o.Data)
			return
		}
		o.deflated = wsframe.AppendFrame(nil, ws.Rsv(true, false, false), ws.OpText, z)
	})
	return o.deflated
}

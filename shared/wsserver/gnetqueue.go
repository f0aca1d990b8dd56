package wsserver

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/shared/wsserver/wsframe"
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
	sq := st.queue
	if sq == nil {
		return ErrClosing // not a queued target
	}
	q := st.loop.g.opts.Queue
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
	err := st.conn.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		st.flush()
		return nil
	}))
	if err != nil {
		return ErrClosing // the engine is shutting down
	}
	return nil
}

// maxIovec is Linux's IOV_MAX: writev refuses more buffers at once (and
// gnet would close the connection over it).
const maxIovec = 1024

// flush writes everything queued, in order, on the loop: one writev per
// 1,024 messages.
func (st *gconn) flush() {
	sq := st.queue
	if sq == nil {
		return
	}
	sq.mu.Lock()
	frames, n, bytes := sq.frames, len(sq.frames), sq.bytes
	sq.frames, sq.spare = sq.spare[:0], frames
	sq.bytes, sq.entries = 0, 0
	sq.flushing = false
	sq.mu.Unlock()
	defer clear(frames) // the frames belong to their Outgoing, not to us
	if st.phase != phaseOpen {
		return // closing or closed: nothing may follow the close frame
	}
	for rest := frames; len(rest) > 0; {
		k := min(len(rest), maxIovec)
		if _, _ = st.conn.Writev(rest[:k]); st.phase == phaseClosed {
			return
		}
		rest = rest[k:]
	}
	st.loop.g.m.Sent(n, bytes)
	sq.outbound.Store(int64(st.conn.OutboundBuffered()))
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

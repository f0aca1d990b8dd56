package echo

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// fakeGnet records what the event loop's connection is given to write.
type fakeGnet struct {
	gnet.Conn
	out bytes.Buffer
}

func (f *fakeGnet) Write(p []byte) (int, error) { return f.out.Write(p) }

// newTestPipe is a pipelined WebSocket connection of size-byte messages
// that has sent n of them, at once, in the window.
func newTestPipe(size, n int) (*pipeConn, *fakeGnet) {
	start := time.Now().Add(-time.Second)
	tl := timeline.New(start)
	w := &worker{pl: newPayload(size, false), errs: &tally.Errors{}, closing: &atomic.Bool{}, lat: protocol.NewHistogram(),
		late: protocol.NewHistogram(), tl: tl, seconds: tl.Local()}
	g := &fakeGnet{}
	win := window{start: start, from: start, to: start.Add(time.Hour), stop: make(chan struct{})}
	p := &pipeConn{w: w, g: g, ws: true, win: win, msg: make([]byte, size), next: uint64(n),
		batches: []sentMsg{{seq: 0, n: n, at: start.Add(time.Millisecond)}}}
	return p, g
}

// message is echo seq of a size-byte payload.
func message(size int, seq uint64) []byte {
	b := make([]byte, size)
	newPayload(size, false).fill(b, seq)
	return b
}

// TestLoopFrames: the event loops' parser takes the frames the goroutines'
// reader takes (fragments with control frames between them, a ping
// answered with a masked pong, a message longer than the size, a text
// message), however the reads split them.
func TestLoopFrames(t *testing.T) {
	t.Parallel()
	const size = 16
	m0, m1, m3 := message(size, 0), message(size, 1), message(size, 3)
	var stream bytes.Buffer
	for _, f := range []ws.Frame{
		ws.NewFrame(ws.OpBinary, false, m0[:3]),
		ws.NewPingFrame([]byte("p")),
		ws.NewFrame(ws.OpContinuation, false, m0[3:7]),
		ws.NewPongFrame(nil),
		ws.NewFrame(ws.OpContinuation, true, m0[7:]),
		ws.NewBinaryFrame(m1),
		ws.NewBinaryFrame(bytes.Repeat([]byte("x"), 70000)), // message 2: too long
		ws.NewTextFrame(m3),                                 // message 3: text
		ws.NewBinaryFrame(message(size, 4)),
	} {
		if err := ws.WriteFrame(&stream, f); err != nil {
			t.Fatal(err)
		}
	}
	all := stream.Bytes()
	for _, split := range []int{len(all), 1, 2, 3, 7, 100, 4096} {
		p, g := newTestPipe(size, 5)
		var in []byte
		for i := 0; i < len(all); i += split {
			in = append(in, all[i:min(i+split, len(all))]...)
			used, err := p.parse(in, time.Now())
			if err != nil {
				t.Fatalf("split %d: %v", split, err)
			}
			in = in[used:]
			if len(in) > size+ws.MaxHeaderSize+125 {
				t.Fatalf("split %d: %d bytes left unparsed", split, len(in))
			}
		}
		p.w.record()
		errs := p.w.errs.Map()
		if len(in) != 0 || p.w.received != 5 || p.w.measured != 3 || p.expect != 5 || p.free != 5 || len(p.batches) != 0 {
			t.Errorf("split %d: %d bytes left, received %d, measured %d, expect %d, free %d, batches %v", split, len(in), p.w.received, p.w.measured, p.expect, p.free, p.batches)
		}
		if m := errs[kindMismatch]; m.Count != 2 || !strings.Contains(m.First, "70000 bytes for a 16-byte message") || len(errs) != 1 {
			t.Errorf("split %d: errors %v", split, errs)
		}
		if p.w.lat.TotalCount() != 3 || cap(p.partial) > 64 {
			t.Errorf("split %d: %d latencies, kept %d bytes", split, p.w.lat.TotalCount(), cap(p.partial))
		}
		pong, err := readFrame(&g.out)
		if err != nil {
			t.Fatal(err)
		}
		if ws.Cipher(pong.Payload, pong.Header.Mask, 0); pong.Header.OpCode != ws.OpPong || string(pong.Payload) != "p" || !pong.Header.Masked || g.out.Len() != 0 {
			t.Errorf("split %d: no masked pong with the ping's payload", split)
		}
	}

	// The target's close ends the connection with its code; a masked
	// frame from the target is an error.
	for _, f := range []ws.Frame{ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusInternalServerError, "enough")), ws.MaskFrame(ws.NewBinaryFrame(m0))} {
		p, _ := newTestPipe(size, 1)
		b, _ := ws.CompileFrame(f)
		if _, err := p.parse(b, time.Now()); err == nil || !strings.Contains(err.Error(), map[bool]string{true: "1011", false: "masked"}[f.Header.OpCode == ws.OpClose]) {
			t.Errorf("%s frame: %v", opName(f.Header.OpCode), err)
		}
	}
}

// TestLoopFrameOut: a batch is masked frames of the opcode given that
// unmask to the messages.
func TestLoopFrameOut(t *testing.T) {
	t.Parallel()
	msgs := []string{"a", strings.Repeat("b", 200), strings.Repeat("c", 70000)}
	for _, op := range []ws.OpCode{ws.OpBinary, ws.OpText} {
		var out []byte
		for _, m := range msgs {
			out = appendClientFrame(out, op, []byte(m))
		}
		checkClientFrames(t, bytes.NewReader(out), op, msgs)
	}
}

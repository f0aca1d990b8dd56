package echo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/loadgen/internal/target"
)

// msgConn is one connection that carries messages: a WebSocket, or a raw
// TCP stream on which a message is just its bytes. One goroutine may send
// (queue and flush) while another receives.
type msgConn interface {
	// queue frames message p into the connection's write buffer.
	queue(p []byte)
	// flush writes the queued messages with one system call: on loopback
	// the sender's write carries most of the kernel's work, so a batch of
	// pipelined messages costs little more than one.
	flush() error
	// recv reads one message into p and returns its whole length, which
	// may differ from len(p) on a WebSocket (only p's worth is kept). An
	// error that wraps errMismatch leaves the connection usable.
	recv(p []byte) (int, error)
	// close ends the connection; on a WebSocket with a close frame (1000)
	// first, so that the target counts a normal closure.
	close()
}

// dialFunc opens one connection.
type dialFunc func(ctx context.Context) (msgConn, error)

// errMismatch marks an echo that is not the message sent.
var errMismatch = errors.New("echo differs from the message sent")

// readBuffer is the read buffer of every connection, WebSocket or TCP alike,
// so that both read a pipelined burst in as few system calls.
const readBuffer = 16 << 10

// dialer returns the dial function for cfg's URL; each dial is bounded by
// cfg.Timeout.
func dialer(cfg Config) dialFunc {
	u, _ := target.ParseURL(cfg.URL) // checked by ParseFlags
	opts := target.Options{Timeout: cfg.Timeout, ReadBuffer: readBuffer, TLS: cfg.TLS.Config()}
	if u.TCP {
		return func(ctx context.Context) (msgConn, error) {
			c, err := target.DialTCP(ctx, u, opts)
			if err != nil {
				return nil, err
			}
			return &tcpConn{writer: writer{c: c}, r: bufio.NewReaderSize(c, readBuffer)}, nil
		}
	}
	// gobwas/ws gives the bare stream: the frames are built here, several
	// to a write, with no allocation per message.
	return func(ctx context.Context) (msgConn, error) {
		c, r, err := target.DialWebSocketStream(ctx, u, opts)
		if err != nil {
			return nil, err
		}
		return &wsConn{writer: writer{c: c}, r: r, rhdr: make([]byte, ws.MaxHeaderSize), whdr: make([]byte, ws.MaxHeaderSize), text: cfg.Text}, nil
	}
}

// writer is the send side of both kinds of connection: a buffer of queued
// bytes, written at once.
type writer struct {
	c   net.Conn
	out []byte
}

func (w *writer) flush() error {
	_, err := w.c.Write(w.out)
	w.out = w.out[:0]
	return err
}

// Write appends p to the queue: ws.WriteHeaderBuffer writes through it.
func (w *writer) Write(p []byte) (int, error) {
	w.out = append(w.out, p...)
	return len(p), nil
}

// wsConn frames messages as a client must (masked, RFC 6455 5.3), each in
// one frame, binary (text with -text), and reads the target's frames.
type wsConn struct {
	writer
	r    *bufio.Reader
	text bool
	// ws.ReadHeaderBuffer's and WriteHeaderBuffer's scratch (one each:
	// the receiver and the sender run at once), kept so that neither
	// allocates.
	rhdr, whdr []byte
	control    [125]byte
}

func (w *wsConn) queue(p []byte) {
	h := ws.Header{Fin: true, OpCode: dataOp(w.text), Masked: true, Mask: ws.NewMask(), Length: int64(len(p))}
	_ = ws.WriteHeaderBuffer(&w.writer, h, w.whdr) // appends: cannot fail
	start := len(w.out)
	w.out = append(w.out, p...)
	ws.Cipher(w.out[start:], h.Mask, 0)
}

// recv reads the frames of one message (fragments reassembled), answering
// the control frames that come between them.
func (w *wsConn) recv(p []byte) (int, error) {
	n := 0
	var op ws.OpCode // of the message's first frame
	for {
		h, err := ws.ReadHeaderBuffer(w.r, w.rhdr)
		if err != nil {
			return n, err
		}
		if h.Masked || h.Rsv != 0 {
			return n, fmt.Errorf("websocket: a masked or extended frame from the target (header %+v)", h)
		}
		if h.OpCode.IsControl() {
			if err := w.handleControl(h); err != nil {
				return n, err
			}
			continue
		}
		if (op == 0) != (h.OpCode != ws.OpContinuation) { // first frame, or the next fragment
			return n, fmt.Errorf("websocket: unexpected %s frame", opName(h.OpCode))
		}
		if op == 0 {
			op = h.OpCode
		}
		// Keep what fits in p, skip the rest.
		room := p[min(n, len(p)):]
		keep := int(min(h.Length, int64(len(room))))
		if _, err := io.ReadFull(w.r, room[:keep]); err != nil {
			return n, err
		}
		if _, err := w.r.Discard(int(h.Length) - keep); err != nil {
			return n, err
		}
		n += int(h.Length)
		if h.Fin {
			break
		}
	}
	return n, opErr(op, dataOp(w.text))
}

// dataOp is the opcode of the messages sent, which their echoes must
// have too: a server may take text and binary apart (text is UTF-8 to
// check), so an echo of the other kind is not the message sent.
func dataOp(text bool) ws.OpCode {
	if text {
		return ws.OpText
	}
	return ws.OpBinary
}

// opErr is the mismatch of an echo that came as op for a message sent as
// want; nil when they are the same.
func opErr(op, want ws.OpCode) error {
	if op != want {
		return fmt.Errorf("%w: a %s message for a %s one", errMismatch, opName(op), opName(want))
	}
	return nil
}

// handleControl reads a control frame's payload: a close ends the
// connection with the target's code, a ping gets its pong (written at once:
// a net.Conn's writes do not interleave), a pong is dropped.
func (w *wsConn) handleControl(h ws.Header) error {
	if h.Length > int64(len(w.control)) {
		return fmt.Errorf("websocket: a control frame of %d bytes", h.Length)
	}
	b := w.control[:h.Length]
	if _, err := io.ReadFull(w.r, b); err != nil {
		return err
	}
	return answerControl(w.c, h.OpCode, b)
}

// answerControl answers the target's control frame (payload b) on c: a
// ping with its pong; a close ends the connection with the target's code.
func answerControl(c io.Writer, op ws.OpCode, b []byte) error {
	switch op {
	case ws.OpClose:
		if len(b) < 2 {
			return errors.New("websocket: closed by the target (no status)")
		}
		return fmt.Errorf("websocket: closed by the target: %d %q", binary.BigEndian.Uint16(b), b[2:])
	case ws.OpPing:
		_, err := c.Write(ws.MustCompileFrame(ws.MaskFrame(ws.NewPongFrame(b))))
		return err
	}
	return nil
}

func opName(op ws.OpCode) string {
	switch op {
	case ws.OpContinuation:
		return "continuation"
	case ws.OpText:
		return "text"
	case ws.OpBinary:
		return "binary"
	}
	return fmt.Sprintf("opcode %d", op)
}

func (w *wsConn) close() {
	_ = w.c.SetWriteDeadline(time.Now().Add(time.Second))
	frame := ws.MaskFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "")))
	_ = ws.WriteFrame(w.c, frame)
	_ = w.c.Close()
}

type tcpConn struct {
	writer
	r *bufio.Reader
}

func (t *tcpConn) queue(p []byte) { t.out = append(t.out, p...) }

// recv reads as many bytes as were sent: the stream has no boundaries.
func (t *tcpConn) recv(p []byte) (int, error) { return io.ReadFull(t.r, p) }

func (t *tcpConn) close() { _ = t.c.Close() }

// payload makes and checks the messages of a run: the same pattern each
// time (lowercase letters), with the message's sequence number at its
// start, so that an echo of the wrong message does not pass. A binary
// message carries it in its first eight bytes, little-endian; a text
// message, which must be valid UTF-8, in its first sixteen as hex digits,
// the most significant first, so that the whole message is ASCII. A
// shorter message carries as much of the number as fits, its low-order
// part: seq mod 256^size in binary, mod 16^size in text.
type payload struct {
	pattern []byte
	text    bool
}

func newPayload(size int, text bool) payload {
	p := make([]byte, size)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return payload{pattern: p, text: text}
}

// maxSeqBytes is the most bytes a sequence number takes: 16 hex digits.
const maxSeqBytes = 16

// seqBytes is how many bytes of a message carry its sequence number.
func (p payload) seqBytes() int {
	if p.text {
		return min(maxSeqBytes, len(p.pattern))
	}
	return min(8, len(p.pattern))
}

// putSeq writes seq's low-order part into b (len(b) == p.seqBytes()).
func (p payload) putSeq(b []byte, seq uint64) {
	if p.text {
		for i := len(b) - 1; i >= 0; i-- {
			b[i] = hexDigits[seq&0xf]
			seq >>= 4
		}
		return
	}
	for i := range b {
		b[i] = byte(seq >> (8 * i))
	}
}

const hexDigits = "0123456789abcdef"

// fill writes message seq into buf (len(buf) == size).
func (p payload) fill(buf []byte, seq uint64) {
	k := p.seqBytes()
	p.putSeq(buf[:k], seq)
	copy(buf[k:], p.pattern[k:])
}

// check compares an echo of n bytes (got holds the first len(got) of them)
// with message seq.
func (p payload) check(got []byte, n int, seq uint64) error {
	if n != len(p.pattern) {
		return fmt.Errorf("%w: %d bytes for a %d-byte message", errMismatch, n, len(p.pattern))
	}
	k := p.seqBytes()
	var want [maxSeqBytes]byte
	p.putSeq(want[:k], seq)
	if !bytes.Equal(got[:k], want[:k]) {
		return p.seqErr(got[:k], seq)
	}
	if !bytes.Equal(got[k:], p.pattern[k:]) {
		i := k
		for got[i] == p.pattern[i] {
			i++
		}
		return fmt.Errorf("%w: byte %d is %#x, want %#x", errMismatch, i, got[i], p.pattern[i])
	}
	return nil
}

// seqErr is the mismatch of got, the sequence number of an echo, for
// message seq. It makes its own copy of the number wanted: check's, given
// to fmt, would move to the heap on every call.
func (p payload) seqErr(got []byte, seq uint64) error {
	want := make([]byte, len(got))
	p.putSeq(want, seq)
	format := "%w: sequence number %x, want %x (a message lost, repeated or reordered)"
	if p.text {
		format = "%w: sequence number %q, want %q (a message lost, repeated or reordered)"
	}
	return fmt.Errorf(format, errMismatch, got, want)
}

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

	"github.com/gorilla/websocket"

	"knowngood/loadgen/internal/target"
)

// msgConn is one connection that carries messages: a WebSocket, or a raw
// TCP stream on which a message is just its bytes. One goroutine may send
// while another receives.
type msgConn interface {
	// send writes one message.
	send(p []byte) error
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
	opts := target.Options{Timeout: cfg.Timeout, ReadBuffer: readBuffer, WriteBuffer: readBuffer}
	if u.TCP {
		return func(ctx context.Context) (msgConn, error) {
			c, err := target.DialTCP(ctx, u, opts)
			if err != nil {
				return nil, err
			}
			return &tcpConn{c: c, r: bufio.NewReaderSize(c, readBuffer)}, nil
		}
	}
	// A message larger than the write buffer goes out as several frames,
	// which the targets reassemble.
	return func(ctx context.Context) (msgConn, error) {
		c, err := target.DialWebSocket(ctx, u, opts)
		if err != nil {
			return nil, err
		}
		return &wsConn{c: c}, nil
	}
}

type wsConn struct{ c *websocket.Conn }

func (w *wsConn) send(p []byte) error { return w.c.WriteMessage(websocket.BinaryMessage, p) }

func (w *wsConn) recv(p []byte) (int, error) {
	typ, r, err := w.c.NextReader()
	if err != nil {
		return 0, err
	}
	n, err := io.ReadFull(r, p)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return n, err
	}
	if err == nil { // p is full: is there more?
		extra, err := io.Copy(io.Discard, r)
		n += int(extra)
		if err != nil {
			return n, err
		}
	}
	if typ != websocket.BinaryMessage {
		return n, fmt.Errorf("%w: a text message for a binary one", errMismatch)
	}
	return n, nil
}

func (w *wsConn) close() {
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	_ = w.c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
	_ = w.c.Close()
}

type tcpConn struct {
	c net.Conn
	r *bufio.Reader
}

func (t *tcpConn) send(p []byte) error {
	_, err := t.c.Write(p)
	return err
}

// recv reads as many bytes as were sent: the stream has no boundaries.
func (t *tcpConn) recv(p []byte) (int, error) { return io.ReadFull(t.r, p) }

func (t *tcpConn) close() { _ = t.c.Close() }

// payload makes and checks the messages of a run: the same pattern each
// time, with the message's sequence number (little-endian) in its first
// eight bytes (fewer when the message is shorter), so that an echo of the
// wrong message does not pass.
type payload struct{ pattern []byte }

func newPayload(size int) payload {
	p := make([]byte, size)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return payload{pattern: p}
}

// seqBytes is how many bytes of a message carry its sequence number.
func (p payload) seqBytes() int { return min(8, len(p.pattern)) }

// fill writes message seq into buf (len(buf) == size).
func (p payload) fill(buf []byte, seq uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq)
	k := p.seqBytes()
	copy(buf[:k], b[:k])
	copy(buf[k:], p.pattern[k:])
}

// check compares an echo of n bytes (got holds the first len(got) of them)
// with message seq.
func (p payload) check(got []byte, n int, seq uint64) error {
	if n != len(p.pattern) {
		return fmt.Errorf("%w: %d bytes for a %d-byte message", errMismatch, n, len(p.pattern))
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq)
	k := p.seqBytes()
	if !bytes.Equal(got[:k], b[:k]) {
		return fmt.Errorf("%w: sequence number %x, want %x (a message lost, repeated or reordered)", errMismatch, got[:k], b[:k])
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

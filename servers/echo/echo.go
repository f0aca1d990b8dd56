// Package echo is the WebSocket echo target on three libraries (variants
// echo-gorilla, echo-coder and echo-gnet) and the raw TCP echo that they are
// measured against (echo-tcp).
//
// The three WebSocket targets behave the same (see DESIGN.md and issue 3):
// they upgrade on any path; a request that is not an upgrade gets 426,
// garbage 400, a forbidden Origin 403 and a connection over -max-conns 503;
// every message comes back as it came (fragmented messages whole); a
// message over -max-message closes with 1009, invalid UTF-8 text with 1007;
// the close handshake answers with the client's code; Shutdown sends 1001.
// What the libraries do not do alike is done here: the request checks
// (upgrade.go), the UTF-8 check (gorilla and coder do not make it), the
// size check on decompressed messages, and the accounting.
//
// Files: upgrade.go (the request checks, shared by all three), httpfront.go
// (net/http under gorilla and coder), gorilla.go, coder.go, gnet.go and
// gnetframe.go (gnet with gobwas/ws framing), tcp.go (the raw floor).
package echo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"knowngood/shared/config"
	"knowngood/shared/lifecycle"
	"knowngood/shared/metrics"
)

// NewGorilla builds echo-gorilla. m may be nil (-metrics=false): the same
// target without instrumentation.
func NewGorilla(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return newHTTPTarget(cfg, m, log, gorillaUpgrader(cfg)), nil
}

// NewCoder builds echo-coder.
func NewCoder(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return newHTTPTarget(cfg, m, log, coderUpgrader(cfg)), nil
}

// NewGnet builds echo-gnet.
func NewGnet(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return newGnetTarget(cfg, m, log)
}

// NewTCP builds echo-tcp.
func NewTCP(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return newTCPTarget(cfg, m, log), nil
}

const (
	// transport is the transport label of the handshake metrics.
	transport = "websocket"

	// closeWait bounds how long a connection whose close the server started
	// waits for the client's answer before the TCP connection is dropped.
	closeWait = 2 * time.Second

	// maxHeaderBytes caps an upgrade request's header, as net/http's
	// MaxHeaderBytes does (net/http allows 4096 bytes more: so does gnet).
	maxHeaderBytes = 16 << 10

	// keepBuffer is the largest message buffer handed back to the pool: a
	// rare huge message does not pin its memory for good.
	keepBuffer = 64 << 10
)

// Disconnect reasons (knowngood_disconnects_total{reason}) are close codes:
// the client's when it closed, the server's when the server did, and 1006
// when the TCP connection ended without a close frame.
const (
	reasonAbnormal = "1006"
	reasonProtocol = "1002"
	reasonTooBig   = "1009"
)

// codeReason is the disconnect reason for a close code.
func codeReason(code int) string { return strconv.Itoa(code) }

// wireLimit is the largest compressed message accepted on the wire when the
// decompressed limit is max: incompressible data grows a little when
// deflated (a few bytes per block; max/64 is ample), and the decompressed
// size is checked on its own.
func wireLimit(max int64) int64 { return max + max/64 + 1024 }

// buffers holds message buffers, so that echoing a message allocates
// nothing once the pool is warm, and an idle connection holds no buffer.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > keepBuffer {
		return
	}
	*b = (*b)[:0]
	buffers.Put(b)
}

// errTooBig: a message over the limit.
var errTooBig = errors.New("message over -max-message")

// readMessage appends all of r to *buf. With max >= 0, it stops with
// errTooBig as soon as more than max bytes have come.
func readMessage(r io.Reader, buf *[]byte, max int64) error {
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		*buf = b
		if max >= 0 && int64(len(b)) > max {
			return errTooBig
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// clientLeft reports whether err means that the peer went away (EOF or a
// reset), as opposed to the server giving up (a timeout) or a bad request.
func clientLeft(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// netFailure reports whether err is an I/O error rather than a protocol
// error found by a library.
func netFailure(err error) bool {
	var ne net.Error
	return clientLeft(err) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

// acceptErrorReason names an accept error for the accept_errors metric:
// the errno's name (EMFILE, ENFILE, ...) where there is one.
func acceptErrorReason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return "other"
}

// acceptBackoff is the pause after a failed accept, doubled from 5 ms up to
// 1 s as net/http does, so that EMFILE does not spin a core.
func acceptBackoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return 5 * time.Millisecond
	}
	return min(2*prev, time.Second)
}

// validCloseCode reports whether a client may send code in a close frame
// (RFC 6455 7.4, with the codes IANA has registered since: 1012-1014).
func validCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// registry is the set of connections a target has to tell when it shuts
// down. Once closing, it refuses new entries, and empty is closed when the
// last one leaves.
type registry[T comparable] struct {
	mu      sync.Mutex
	peers   map[T]struct{}
	closing bool
	empty   chan struct{}
}

func newRegistry[T comparable]() *registry[T] {
	return &registry[T]{peers: map[T]struct{}{}, empty: make(chan struct{})}
}

// add registers p; false once the registry is closing.
func (r *registry[T]) add(p T) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return false
	}
	r.peers[p] = struct{}{}
	return true
}

func (r *registry[T]) remove(p T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.peers, p)
	r.signalEmptyLocked()
}

// close refuses new entries and returns the current ones.
func (r *registry[T]) close() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closing = true
	r.signalEmptyLocked()
	return r.snapshotLocked()
}

func (r *registry[T]) snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

func (r *registry[T]) snapshotLocked() []T {
	out := make([]T, 0, len(r.peers))
	for p := range r.peers {
		out = append(out, p)
	}
	return out
}

func (r *registry[T]) signalEmptyLocked() {
	if !r.closing || len(r.peers) > 0 {
		return
	}
	select {
	case <-r.empty:
	default:
		close(r.empty)
	}
}

// wait returns true once a closing registry is empty, false if ctx ends
// first.
func (r *registry[T]) wait(ctx context.Context) bool {
	select {
	case <-r.empty:
		return true
	case <-ctx.Done():
		return false
	}
}

// drain is the shutdown sequence every target follows: tell every peer
// (goAway), wait for them to leave for half the time left, then drop the
// ones still there (kill) and wait for them to go.
func drain[T comparable](ctx context.Context, r *registry[T], goAway, kill func(T)) error {
	for _, p := range r.close() {
		goAway(p)
	}
	grace := 2 * time.Second
	if deadline, ok := ctx.Deadline(); ok {
		grace = time.Until(deadline) / 2
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if r.wait(gctx) {
		return nil
	}
	for _, p := range r.snapshot() {
		kill(p)
	}
	if !r.wait(ctx) {
		return ctx.Err()
	}
	return nil
}

// recovered turns a panic in a connection's code into a log line: a bug
// costs that connection, never the process.
func recovered(log *slog.Logger, where string, v any) {
	log.Error("panic serving a connection", "where", where, "panic", fmt.Sprint(v))
}

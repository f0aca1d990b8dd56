package wsserver_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/wstest"
)

// serverClose is the server's close frame with code and no reason, as
// Node's ws sends it.
func serverClose(code int) []byte {
	return binary.BigEndian.AppendUint16([]byte{0x88, 2}, uint16(code))
}

// serverFrame is an unmasked final frame of a payload under 126 bytes.
func serverFrame(b0 byte, payload []byte) []byte {
	return append([]byte{b0, byte(len(payload))}, payload...)
}

// readExactly reads n bytes of the server's answer.
func (rc *rawConn) readExactly(n int) []byte {
	rc.t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(rc.br, b); err != nil {
		rc.t.Fatalf("reading %d bytes: %v (got % x)", n, err, b)
	}
	return b
}

// untilEOF reads until the server closes the connection and returns what
// came and how long the close took. The client never closes first.
func (rc *rawConn) untilEOF() ([]byte, time.Duration) {
	rc.t.Helper()
	began := time.Now()
	b, err := io.ReadAll(rc.br)
	took := time.Since(began)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		rc.t.Fatalf("the server did not close the connection (read % x)", b)
	}
	return b, took
}

const lengthTop = uint64(1) << 63 // 2^63: the 64-bit length's top bit

// frameCase is a byte-level exchange: the client writes send, the server
// must answer with exactly want, then close the TCP connection: at once
// (quick), or once the client has answered its close (answer), or at the
// end of its wait for an answer that does not come.
type frameCase struct {
	name   string
	send   []byte
	want   []byte
	answer bool // the client answers the server's close frame
	quick  bool // the server closes at once, without waiting for anything
}

func frameCases() []frameCase {
	const max = 1000 // -max-message
	text := func(fin bool, p []byte) []byte {
		if fin {
			return wstest.Frame(0x81, p)
		}
		return wstest.Frame(0x01, p)
	}
	closeWith := func(code int, reason string) []byte {
		return wstest.Frame(0x88, closePayload(code, reason))
	}
	cases := []frameCase{
		{name: "overflowing continuation 2^63-1",
			send: append(text(false, wstest.Payload(10)), wstest.Header(0x80, math.MaxInt64)...),
			want: serverClose(1009)},
		{name: "overflowing continuation 2^63-10",
			send: append(text(false, wstest.Payload(10)), wstest.Header(0x80, math.MaxInt64-9)...),
			want: serverClose(1009)},
		{name: "overflowing continuation 2^63-11",
			send: append(text(false, wstest.Payload(10)), wstest.Header(0x80, math.MaxInt64-10)...),
			want: serverClose(1009)},
		{name: "header announcing 2^63-1", send: wstest.Header(0x82, math.MaxInt64), want: serverClose(1009)},
		{name: "length with the top bit set", send: wstest.Header(0x82, lengthTop+5), want: serverClose(1002), quick: true},
		{name: "close frame with 1 byte", send: wstest.Frame(0x88, []byte{3}), want: serverClose(1002), quick: true},
		{name: "close reason not UTF-8", send: closeWith(1000, "\xce\xba\xff"), want: serverClose(1007), quick: true},
		{name: "close frame of 126 bytes", send: wstest.Frame(0x88, closePayload(1000, string(wstest.Payload(124)))), want: serverClose(1002), quick: true},
		{name: "fragmented close", send: wstest.Frame(0x08, closePayload(1000, "")), want: serverClose(1002), quick: true},
		{name: "empty close", send: wstest.Frame(0x88, nil), want: serverFrame(0x88, nil), quick: true},
		{name: "oversize message", send: wstest.Frame(0x82, wstest.Payload(max+1)), want: serverClose(1009), answer: true},
		{name: "oversize in fragments", send: append(text(false, wstest.Payload(600)), wstest.Frame(0x80, wstest.Payload(401))...), want: serverClose(1009), answer: true},
		{name: "a message, then a bad opcode",
			send: append(text(true, []byte("hi")), wstest.Frame(0x83, nil)...),
			want: append(serverFrame(0x81, []byte("hi")), serverClose(1002)...), answer: true},
		{name: "RSV1 without compression", send: wstest.Frame(0xc1, []byte("x")), want: serverClose(1002), answer: true},
	}
	// Autobahn 7.7.x and 7.9.x: valid codes are echoed with their reason,
	// as Node's ws does; invalid ones get 1002.
	for _, code := range []int{1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999} {
		p := closePayload(code, "bye")
		cases = append(cases, frameCase{name: fmt.Sprintf("close %d", code), send: wstest.Frame(0x88, p), want: serverFrame(0x88, p), quick: true})
	}
	for _, code := range []int{0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535} {
		cases = append(cases, frameCase{name: fmt.Sprintf("close %d", code), send: closeWith(code, ""), want: serverClose(1002), quick: true})
	}
	return cases
}

// TestFrameBytes: every target answers each of these frames with the same
// bytes, Node's ws's, and closes the TCP connection first (RFC 6455 7.1.1):
// a length that would overflow a sum gets 1009 as soon as its header is in,
// a bad close frame gets its close code and the connection ends at once.
// The client never closes first. "At once" is a ratio: such a close takes
// under half the time of the server's wait for a client that does not
// answer its close.
func TestFrameBytes(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) { c.MaxMessage = 1000 })

		// The reference: the server's close wait, for a client that
		// does not answer.
		rc := rawDial(t, tg.Addr)
		rc.write(wstest.Frame(0x82, wstest.Payload(1001)))
		if got := rc.readExactly(4); !bytes.Equal(got, serverClose(1009)) {
			t.Fatalf("got % x, want % x", got, serverClose(1009))
		}
		_, wait := rc.untilEOF()

		for _, c := range frameCases() {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel() // the cases that wait for the close wait overlap
				rc := rawDial(t, tg.Addr)
				rc.write(c.send)
				got := rc.readExactly(len(c.want))
				if !bytes.Equal(got, c.want) {
					t.Fatalf("got % x, want % x", got, c.want)
				}
				if c.answer {
					rc.write(wstest.Frame(0x88, got[len(got)-2:]))
				}
				rest, took := rc.untilEOF()
				if len(rest) > 0 {
					t.Errorf("after the close frame: % x", rest)
				}
				if (c.quick || c.answer) && took > wait/2 {
					t.Errorf("closed after %v; the close wait is %v", took, wait)
				}
			})
		}
	})
}

// TestOverflowBounded: after the continuation whose length would overflow,
// the client streams 32 MiB more; the server has closed with 1009 at once,
// drops what comes, and holds none of it.
//
// It weighs the process's heap, so it is not parallel with the other
// tests. Its libraries' runs are, but each holds weighing from its start
// to its weighing: what overlaps is the rest, the server's close wait,
// which allocates next to nothing.
func TestOverflowBounded(t *testing.T) {
	var weighing sync.Mutex
	forEach(t, func(t *testing.T, name string, b build) {
		var grew int64
		rc := func() *rawConn {
			weighing.Lock()
			defer weighing.Unlock() // on t.Fatal too
			tg := start(t, name, b, nil)
			rc := rawDial(t, tg.Addr)
			rc.write(wstest.Frame(0x01, wstest.Payload(10)))
			rc.write(wstest.Header(0x80, math.MaxInt64-9))
			if got := rc.readExactly(4); !bytes.Equal(got, serverClose(1009)) {
				t.Fatalf("got % x, want 1009 at once", got)
			}
			before := heapInUse()
			chunk := make([]byte, 1<<20)
			for range 32 {
				if _, err := rc.c.Write(chunk); err != nil {
					break // the server's wait ended: it closed
				}
			}
			grew = heapInUse() - before
			return rc
		}()
		if grew > 8<<20 {
			t.Errorf("the heap grew by %d MiB while 32 MiB of a refused frame came", grew>>20)
		}
		rc.untilEOF()
	})
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

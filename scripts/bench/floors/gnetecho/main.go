// Command gnetecho is the floor that echo-gnet and broadcast-gnet are
// measured against in make bench-conns and make bench-echo: a minimal
// WebSocket echo server on the same gnet engine (as many event loops as
// CPUs), which lets gnet accept, upgrades with gobwas/ws, and echoes text
// and binary frames as they come, answering pings and closes. It keeps no
// metrics, no timeouts, no connection cap and no registry: what an idle
// connection costs here is what gnet and the upgrade cost, and whatever
// echo-gnet spends beyond it is knowngood's own.
//
//	go run ./scripts/bench/floors/gnetecho [-addr 127.0.0.1:0]
//
// Once it accepts, it prints {"msg":"listening","addr":"HOST:PORT"} on
// stdout, the line the benchmarks read. It is a benchmark floor, not a
// server to expose: it does not bound a client's upgrade request or
// frames beyond -max-frame.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "TCP `address` to listen on")
	maxFrame := flag.Int("max-frame", 1<<20, "largest frame payload accepted, in bytes; a larger one closes the connection")
	flag.Parse()
	s := &server{maxFrame: *maxFrame}
	err := gnet.Run(s, "tcp://"+*addr, gnet.WithMulticore(true), gnet.WithReuseAddr(true))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gnetecho:", err)
		os.Exit(1)
	}
}

type server struct {
	gnet.BuiltinEventEngine
	maxFrame int
}

// upgraded marks a connection past its upgrade; before it, the context is
// nil.
var upgraded = new(struct{ _ byte })

// OnBoot prints the listening line with the port the kernel chose.
func (s *server) OnBoot(eng gnet.Engine) gnet.Action {
	addr, err := listenAddr(eng)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gnetecho: the listener's address:", err)
		return gnet.Shutdown
	}
	fmt.Printf("{\"msg\":\"listening\",\"addr\":%q}\n", addr)
	return gnet.None
}

func (s *server) OnTraffic(c gnet.Conn) gnet.Action {
	if c.Context() == nil {
		return s.upgrade(c)
	}
	return s.frames(c)
}

var headerEnd = []byte("\r\n\r\n")

// upgrade answers the upgrade request once all of it is in.
func (s *server) upgrade(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	end := bytes.Index(buf, headerEnd)
	if end < 0 {
		if len(buf) > 16<<10 {
			return gnet.Close
		}
		return gnet.None
	}
	n := end + len(headerEnd)
	rw := struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(buf[:n]), c}
	if _, err := ws.Upgrade(rw); err != nil {
		return gnet.Close
	}
	_, _ = c.Discard(n)
	c.SetContext(upgraded)
	if c.InboundBuffered() > 0 {
		return s.frames(c)
	}
	return gnet.None
}

// outs are the buffers the replies of one call gather in, so that a call
// writes once and allocates nothing.
var outs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// frames echoes every whole frame that has arrived.
func (s *server) frames(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	pb := outs.Get().(*[]byte)
	defer func() {
		if cap(*pb) <= 1<<20 {
			*pb = (*pb)[:0]
			outs.Put(pb)
		}
	}()
	out := (*pb)[:0]
	defer func() { *pb = out[:0] }()
	used := 0
	action := gnet.None
	for action == gnet.None {
		b := buf[used:]
		if len(b) < 2 {
			break
		}
		fin, op, masked := b[0]&0x80 != 0, ws.OpCode(b[0]&0x0f), b[1]&0x80 != 0
		size, h := int(b[1]&0x7f), 2
		switch size {
		case 126:
			if len(b) < 4 {
				return s.done(c, out, used, action)
			}
			size, h = int(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			if len(b) < 10 {
				return s.done(c, out, used, action)
			}
			n := binary.BigEndian.Uint64(b[2:])
			if n > uint64(s.maxFrame) {
				return gnet.Close
			}
			size, h = int(n), 10
		}
		if !masked || size > s.maxFrame {
			return gnet.Close
		}
		if len(b) < h+4+size {
			break
		}
		var mask [4]byte
		copy(mask[:], b[h:h+4])
		payload := b[h+4 : h+4+size]
		ws.Cipher(payload, mask, 0)
		used += h + 4 + size
		switch op {
		case ws.OpPing:
			out = appendFrame(out, true, ws.OpPong, payload)
		case ws.OpPong:
		case ws.OpClose:
			out = appendFrame(out, true, ws.OpClose, payload[:min(len(payload), 2)])
			action = gnet.Close
		default:
			out = appendFrame(out, fin, op, payload)
		}
	}
	return s.done(c, out, used, action)
}

func (s *server) done(c gnet.Conn, out []byte, used int, action gnet.Action) gnet.Action {
	if len(out) > 0 {
		_, _ = c.Write(out)
	}
	_, _ = c.Discard(used)
	return action
}

// appendFrame appends an unmasked frame.
func appendFrame(out []byte, fin bool, op ws.OpCode, payload []byte) []byte {
	b0 := byte(op)
	if fin {
		b0 |= 0x80
	}
	switch n := len(payload); {
	case n < 126:
		out = append(out, b0, byte(n))
	case n <= 0xffff:
		out = append(out, b0, 126, byte(n>>8), byte(n))
	default:
		out = append(out, b0, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, payload...)
}

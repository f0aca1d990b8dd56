// Command floor is the fan-out floor of the broadcast benchmark: the
// cheapest server that does what `loadgen broadcast -push` checks of a
// broadcast target, against which the targets' CPU per delivery is
// measured. It upgrades every connection, answers the join echo
// ({"type":"echo",...} -> the same message back) after joining the client,
// and every -push-interval builds one push frame (the targets' layout,
// protocol.AppendPush) and writes it to every member with one write system
// call each, shared by -writers goroutines (GOMAXPROCS). Nothing else: no
// metrics, no queue, no slow-client policy (a client that does not read
// stalls its writer), no limits. It is a yardstick, not a target.
//
//	go run ./scripts/bench/floors/fanout [-addr 127.0.0.1:0] [-push-interval 100ms] [-push-size 100] [-writers N]
//
// It prints {"msg":"listening","addr":"HOST:PORT"} once it listens and
// exits on SIGINT or SIGTERM.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// maxMessage bounds what a client may send (it sends one echo).
const maxMessage = 4096

type member struct {
	mu sync.Mutex // the pusher and the reader's answers (echo, pong)
	c  net.Conn
}

func (m *member) write(b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.c.Write(b)
	return err
}

type server struct {
	mu      sync.Mutex
	members map[*member]struct{}
	dirty   bool // members changed since the pusher's last copy
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen `address`")
	interval := flag.Duration("push-interval", 100*time.Millisecond, "time between pushes")
	size := flag.Int("push-size", 100, "push payload `bytes`")
	writers := flag.Int("writers", runtime.GOMAXPROCS(0), "goroutines that share a push's writes, each a contiguous part of the members")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(map[string]string{"msg": "listening", "addr": ln.Addr().String()})
	fmt.Println(string(line))
	s := &server{members: map[*member]struct{}{}}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go s.push(ctx, *interval, *size, max(*writers, 1))
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like
			continue
		}
		go s.serve(c)
	}
}

func (s *server) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := ws.Upgrade(c); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	m := &member{c: c}
	defer s.leave(m)
	r := bufio.NewReaderSize(c, 512)
	var joined bool
	for {
		h, err := ws.ReadHeader(r)
		if err != nil || h.Length > maxMessage || !h.Masked {
			return
		}
		payload := make([]byte, h.Length)
		if _, err := io.ReadFull(r, payload); err != nil {
			return
		}
		ws.Cipher(payload, h.Mask, 0)
		switch h.OpCode {
		case ws.OpClose:
			_ = m.write(wsframe.AppendFrame(nil, 0, ws.OpClose, payload))
			return
		case ws.OpPing:
			_ = m.write(wsframe.AppendFrame(nil, 0, ws.OpPong, payload))
		case ws.OpText:
			if !strings.HasPrefix(string(payload), `{"type":"echo"`) {
				continue
			}
			// A member from before its echo's answer, as the targets.
			if !joined {
				joined = true
				s.join(m)
			}
			if m.write(wsframe.AppendFrame(nil, 0, ws.OpText, payload)) != nil {
				return
			}
		}
	}
}

func (s *server) join(m *member) {
	s.mu.Lock()
	s.members[m] = struct{}{}
	s.dirty = true
	s.mu.Unlock()
}

func (s *server) leave(m *member) {
	s.mu.Lock()
	delete(s.members, m)
	s.dirty = true
	s.mu.Unlock()
}

// push writes one frame, made once, to every member: one write each,
// shared by writers goroutines as the targets share it among their event
// loops or writer goroutines.
func (s *server) push(ctx context.Context, interval time.Duration, size, writers int) {
	filler := strings.Repeat("x", size)
	t := time.NewTicker(interval)
	defer t.Stop()
	var payload, frame []byte
	var list []*member
	for seq := uint64(1); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.dirty {
			list = list[:0]
			for m := range s.members {
				list = append(list, m)
			}
			s.dirty = false
		}
		s.mu.Unlock()
		payload = protocol.AppendPush(payload[:0], seq, time.Now().UnixNano(), filler)
		frame = wsframe.AppendFrame(frame[:0], 0, ws.OpText, payload)
		var wg sync.WaitGroup
		for i := range writers {
			part := list[len(list)*i/writers : len(list)*(i+1)/writers]
			wg.Go(func() {
				for _, m := range part {
					_ = m.write(frame)
				}
			})
		}
		wg.Wait()
	}
}

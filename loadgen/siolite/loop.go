package siolite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/loadgen/internal/enroll"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// Loop reads many connections on gnet's event loops (epoll, one per two
// cores: see LoopsFor) instead of a goroutine per connection: a goroutine
// each costs a wake-up and two read syscalls per message (the second finds
// the socket empty), and at 20,000 connections at one emit every 1-5 s the
// lean client used more CPU than the gnet replicas it measured. A
// connection is dialled, upgraded (gobwas/ws) and connected to its namespace as
// before, synchronously, then enrolled in a loop, which reads its frames,
// answers its pings and hands on its events and acks; writes go out at
// once from the writer's goroutine, through the loop (AsyncWrite) only
// when the socket is full (writeOnLoop). The server's
// pings are watched by one sweep a second over every connection. TLS
// connections stay on their goroutines.
type Loop struct {
	gnet.BuiltinEventEngine
	cli     *gnet.Client
	enrolls enroll.Gate

	mu    sync.Mutex
	conns map[*Conn]struct{} // enrolled and not ended, for the ping sweep
	stop  chan struct{}
	sweep sync.WaitGroup

	lagMu sync.Mutex
	lag   *hdrhistogram.Histogram // µs, since TakeLag (probeLag)
}

// lagProbe is how often probeLag asks a loop to run a task. Its readers
// are not goroutines, so the Go scheduler's latency does not show a loop
// that falls behind; the time a task waits for it does.
const lagProbe = 100 * time.Millisecond

// LoopsFor is how many event loops a loadgen client on procs Go processors (Ps)
// runs: half of them, at least one. A loop parks its P in epoll_wait, a
// syscall the runtime cannot run other goroutines beside; with a loop on
// every P, each emit's timer and each ack's callback waits for the
// runtime's monitor thread to take a P back from a loop, and the monitor
// then polls every 20 µs. Measured at 10,000 connections against one
// native-gnet replica (emits every 1-5 s, 10 pushes a second) on 2 cores:
// with two loops the client used 1.6x the replica's CPU, a third of it in
// the monitor thread; with one, about the same as the replica, and its
// emit p99 stayed under 5 ms.
func LoopsFor(procs int) int { return max(1, procs/2) }

// NewLoop starts LoopsFor(GOMAXPROCS) event loops. Close it once every
// connection on it is closed.
func NewLoop() (*Loop, error) {
	l := &Loop{conns: map[*Conn]struct{}{}, stop: make(chan struct{}), lag: protocol.NewHistogram()}
	cli, err := gnet.NewClient(l, gnet.WithMulticore(true), gnet.WithNumEventLoop(LoopsFor(runtime.GOMAXPROCS(0))),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay), gnet.WithLogger(quietLog{}))
	if err == nil {
		err = cli.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("gnet client: %w", err)
	}
	l.cli = cli
	l.sweep.Go(l.watchPings)
	l.sweep.Go(l.probeLag)
	return l, nil
}

// probeLag times, every lagProbe, how long a task given to one of the
// loops (one connection's, in turn at random) waits before it runs: how
// late the loop reads what has come. A loop that stalls has every probe
// made meanwhile waiting, and each is counted.
func (l *Loop) probeLag() {
	tick := time.NewTicker(lagProbe)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		var g gnet.Conn
		l.mu.Lock()
		for c := range l.conns {
			g = c.g
			break
		}
		l.mu.Unlock()
		if g == nil {
			continue
		}
		sent := time.Now()
		_ = g.Wake(func(gnet.Conn, error) error {
			l.lagMu.Lock()
			_ = l.lag.RecordValue(max(1, time.Since(sent).Microseconds()))
			l.lagMu.Unlock()
			return nil
		})
	}
}

// TakeLag is how long the loops' tasks waited to run since the last
// TakeLag (or NewLoop), and starts again.
func (l *Loop) TakeLag() protocol.Latency {
	l.lagMu.Lock()
	defer l.lagMu.Unlock()
	lat := protocol.LatencyOf(l.lag)
	l.lag.Reset()
	return lat
}

// Close stops the loops; a connection still open ends as closed.
func (l *Loop) Close() error {
	close(l.stop)
	l.sweep.Wait()
	return l.cli.Stop()
}

// watchPings closes, once a second, every connection whose server has
// sent nothing for longer than its ping interval and timeout together,
// and fails the acks past their deadline.
func (l *Loop) watchPings() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var all []*Conn
	for {
		select {
		case <-l.stop:
			return
		case now := <-tick.C:
			var late []*Conn
			all = all[:0]
			l.mu.Lock()
			for c := range l.conns {
				if now.UnixNano()-c.lastRead.Load() > int64(c.pingWait) {
					late = append(late, c)
				}
				all = append(all, c)
			}
			l.mu.Unlock()
			for _, c := range all {
				c.expireAcks(now.UnixNano())
			}
			for _, c := range late {
				c.endErr.CompareAndSwap(nil, &errNoPing)
				_ = c.g.Close()
			}
		}
	}
}

var errNoPing = errors.New("no ping from the server within its interval and timeout")

// expireAcks fails the acks whose deadline is before now.
func (c *Conn) expireAcks(now int64) {
	var late []*pending
	c.mu.Lock()
	for id, p := range c.acks {
		if p.deadline < now {
			delete(c.acks, id)
			late = append(late, p)
		}
	}
	c.mu.Unlock()
	for _, p := range late {
		p.done(nil, ErrAckTimeout)
	}
}

// dialLoop opens the WebSocket with gobwas/ws and leaves it bare: connect
// reads and writes frames on it until the namespace CONNECT is done.
func dialLoop(ctx context.Context, o Options, wsURL string) (*Conn, error) {
	d := ws.Dialer{NetDial: o.NetDial, ReadBufferSize: 512}
	raw, br, _, err := d.Dial(ctx, wsURL)
	if err != nil {
		if s, ok := err.(ws.StatusError); ok {
			err = fmt.Errorf("websocket upgrade answered HTTP %d", int(s))
		}
		return nil, err
	}
	if br == nil {
		br = bufio.NewReaderSize(raw, 512)
	}
	return &Conn{o: o, raw: raw, br: br, nsp: nspPrefix(o.Namespace), acks: map[int64]*pending{}, done: make(chan struct{})}, nil
}

// enroll hands the connected socket to a loop, with what the reader
// already holds (an event may follow the CONNECT ack at once).
func (l *Loop) enroll(c *Conn, pingWait time.Duration) error {
	if n := c.br.Buffered(); n > 0 {
		b, _ := c.br.Peek(n)
		c.carry = append([]byte(nil), b...)
	}
	c.loop, c.pingWait, c.br = l, pingWait, nil
	c.lastRead.Store(time.Now().UnixNano())
	if _, err := l.enrolls.Enroll(l.cli, c.raw, c); err != nil {
		return err
	}
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	return nil
}

// OnOpen reads what came with the CONNECT ack.
func (l *Loop) OnOpen(g gnet.Conn) ([]byte, gnet.Action) {
	c := g.Context().(*Conn)
	c.wmu.Lock()
	c.g = g
	c.wmu.Unlock()
	if len(c.carry) == 0 {
		return nil, gnet.None
	}
	used, action := c.frames(c.carry)
	c.carry = c.carry[used:]
	return nil, action
}

// OnTraffic reads every whole frame that has come; a frame cut short
// waits in carry for the rest.
func (l *Loop) OnTraffic(g gnet.Conn) gnet.Action {
	c := g.Context().(*Conn)
	buf, err := g.Next(-1)
	if err != nil || len(buf) == 0 {
		return gnet.None // nothing came: probeLag's wake
	}
	c.lastRead.Store(time.Now().UnixNano())
	if len(c.carry) > 0 {
		buf = append(c.carry, buf...)
	}
	used, action := c.frames(buf)
	c.carry = append(c.carry[:0], buf[used:]...) // the loop reuses buf
	return action
}

// OnClose ends the connection as its reader goroutine would.
func (l *Loop) OnClose(g gnet.Conn, err error) gnet.Action {
	c := g.Context().(*Conn)
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	// gnet closes the descriptor after OnClose: from here no write may
	// use its number, which the next socket may get.
	c.wmu.Lock()
	c.fdClosed = true
	c.wmu.Unlock()
	if e := c.endErr.Load(); e != nil {
		err = *e
	}
	if err == nil {
		err = net.ErrClosed
	}
	c.finish(err)
	return gnet.None
}

// frames handles the whole frames at the start of buf and returns the
// bytes they took.
func (c *Conn) frames(buf []byte) (int, gnet.Action) {
	used := 0
	for used < len(buf) {
		h, payload, n, err := wsframe.Next(buf[used:], maxPacket)
		if err != nil {
			c.endErr.CompareAndSwap(nil, ptr(fmt.Errorf("a frame the client cannot read: %w", err)))
			return len(buf), gnet.Close
		}
		if n == 0 {
			return used, gnet.None // the rest of the frame is on its way
		}
		used += n
		var msg []byte
		switch {
		case h.OpCode == ws.OpPing:
			c.writeFrame(ws.OpPong, payload)
			continue
		case h.OpCode == ws.OpClose:
			c.endErr.CompareAndSwap(nil, &errServerClose)
			return len(buf), gnet.Close
		case h.OpCode.IsControl():
			continue
		case !h.Fin || len(c.frag) > 0:
			if c.frag = append(c.frag, payload...); len(c.frag) > maxPacket {
				c.endErr.CompareAndSwap(nil, ptr(errors.New("a message over 1 MiB")))
				return len(buf), gnet.Close
			}
			if !h.Fin {
				continue
			}
			msg, c.frag = c.frag, nil
		default:
			msg = payload
		}
		if h.OpCode == ws.OpBinary {
			c.endErr.CompareAndSwap(nil, ptr(errors.New("binary frame: this client sends no binary attachments")))
			return len(buf), gnet.Close
		}
		if err := c.handle(msg); err != nil {
			c.endErr.CompareAndSwap(nil, &err)
			return len(buf), gnet.Close
		}
	}
	return used, gnet.None
}

func ptr[T any](v T) *T { return &v }

// writeFrame sends one masked frame (RFC 6455 5.3: a client masks every
// frame).
func (c *Conn) writeFrame(op ws.OpCode, payload []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.writeOnLoop(wsframe.ClientFrame(op, payload))
}

// writeOnLoop writes b on an enrolled connection, with c.wmu held: at
// once (writeNow), or through the loop from the first write that did not
// fit, so that nothing overtakes what waits there.
func (c *Conn) writeOnLoop(b []byte) error {
	if c.fdClosed {
		return net.ErrClosed
	}
	if !c.viaLoop {
		rest, err := writeNow(c.g.Fd(), b)
		if err != nil || len(rest) == 0 {
			return err
		}
		b, c.viaLoop = rest, true
	}
	return c.g.AsyncWrite(b, nil)
}

// readRaw is one text message of a connection not yet enrolled,
// answering the pings that come before it.
func (c *Conn) readRaw() ([]byte, error) {
	msg, op, err := wsutil.ReadServerData(struct {
		io.Reader
		io.Writer
	}{c.br, c.raw})
	if err == nil && op != ws.OpText {
		err = errors.New("binary frame: this client sends no binary attachments")
	}
	return msg, err
}

// quietLog keeps gnet's own log out of the load client's output.
type quietLog struct{}

func (quietLog) Debugf(string, ...any) {}
func (quietLog) Infof(string, ...any)  {}
func (quietLog) Warnf(string, ...any)  {}
func (quietLog) Errorf(string, ...any) {}
func (quietLog) Fatalf(string, ...any) {}

package broadcast

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/gobwas/ws"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/loadgen/internal/enroll"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// listeners reads what the subscribers receive on gnet's event loops
// (epoll, one per core) instead of a goroutine per connection: at 10,000
// subscribers and 100,000 deliveries a second, a goroutine each costs the
// client two read syscalls and a wake-up per message, and as much CPU as
// the target it measures. A subscriber is dialled and upgraded with
// gobwas/ws, sends its join echo, and is then enrolled in the loops; the
// frames are read with gobwas/ws. The senders stay on gorilla.
type listeners struct {
	gnet.BuiltinEventEngine
	r       *run
	cli     *gnet.Client
	enrolls enroll.Gate
}

// sub is a subscriber's state, in its gnet.Conn's context; touched only by
// its event loop.
type sub struct {
	m     *member
	carry []byte // bytes read before the loop took over, or a frame split by them
	frag  []byte // a fragmented message so far (targets do not fragment, but may)
}

// maxFrame bounds a frame the subscribers wait for: far over any
// broadcast (a target's -max-message is 1 MiB by default), and a length
// no target sends is not buffered for ever.
const maxFrame = 64 << 20

func newListeners(r *run) (*listeners, error) {
	l := &listeners{r: r}
	cli, err := gnet.NewClient(l,
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(runtime.GOMAXPROCS(0)),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(tally.GnetLog{Errs: r.errs}))
	if err != nil {
		return nil, err
	}
	if err := cli.Start(); err != nil {
		return nil, err
	}
	l.cli = cli
	return l, nil
}

func (l *listeners) stop() { _ = l.cli.Stop() }

// dial connects one subscriber: the upgrade, the join echo (the target
// joins a client before it reads its first message: the echo's answer says
// that this one is in), then the event loops.
func (l *listeners) dial(ctx context.Context, u target.URL, o target.Options, m *member) error {
	c, br, err := target.DialWebSocketStream(ctx, u, o)
	if err != nil {
		return err
	}
	s := &sub{m: m}
	// A push may have come already: what the reader buffered goes first.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		s.carry = append([]byte(nil), b...)
	}
	if _, err := c.Write(wsframe.ClientFrame(ws.OpText, []byte(`{"type":"echo","payload":"join"}`))); err != nil {
		_ = c.Close()
		return err
	}
	g, err := l.enrolls.Enroll(l.cli, c, s)
	if err != nil {
		return err
	}
	m.g = g
	return nil
}

func (l *listeners) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s := c.Context().(*sub)
	if len(s.carry) == 0 {
		return nil, gnet.None
	}
	used, action := l.frames(c, s, s.carry, time.Now().UnixNano())
	s.carry = s.carry[used:]
	return nil, action
}

func (l *listeners) OnTraffic(c gnet.Conn) gnet.Action {
	s := c.Context().(*sub)
	now := time.Now().UnixNano()
	buf, err := c.Peek(-1)
	if err != nil || len(buf) == 0 {
		return gnet.None
	}
	if len(s.carry) > 0 {
		data := append(s.carry, buf...)
		used, action := l.frames(c, s, data, now)
		_, _ = c.Discard(len(buf))
		s.carry = append(s.carry[:0], data[used:]...)
		return action
	}
	used, action := l.frames(c, s, buf, now)
	if used > 0 {
		_, _ = c.Discard(used)
	}
	return action
}

// frames handles every whole frame in buf, received at now, and returns
// how many bytes it used.
func (l *listeners) frames(c gnet.Conn, s *sub, buf []byte, now int64) (int, gnet.Action) {
	used := 0
	for used < len(buf) {
		h, payload, n, err := wsframe.Next(buf[used:], maxFrame)
		if err != nil {
			l.r.errs.Add(kindUnknown, 1, fmt.Errorf("a frame the client cannot read: %w", err))
			return len(buf), gnet.Close
		}
		if n == 0 {
			return used, gnet.None // the rest of the frame is on its way
		}
		used += n
		switch {
		case h.OpCode == ws.OpPing:
			_, _ = c.Write(wsframe.ClientFrame(ws.OpPong, payload))
		case h.OpCode == ws.OpClose:
			// The target closes, or answers the client's close: answer
			// the former with its code, and go.
			if !l.r.closing.Load() {
				_, _ = c.Write(wsframe.ClientFrame(ws.OpClose, payload))
			}
			return len(buf), gnet.Close
		case h.OpCode.IsControl():
		case !h.Fin || len(s.frag) > 0:
			s.frag = append(s.frag, payload...)
			if h.Fin {
				l.r.handle(s.m, s.frag, now)
				s.frag = s.frag[:0]
			}
		default:
			l.r.handle(s.m, payload, now)
		}
	}
	return used, gnet.None
}

func (l *listeners) OnClose(c gnet.Conn, err error) gnet.Action {
	s := c.Context().(*sub)
	if !l.r.closing.Load() {
		if err == nil {
			err = net.ErrClosed
		}
		l.r.dropped(err)
	}
	close(s.m.done)
	return gnet.None
}

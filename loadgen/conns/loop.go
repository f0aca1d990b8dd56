package conns

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"sync"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/loadgen/internal/enroll"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/siolite"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// holders hold idle WebSocket and TCP connections on gnet's event loops
// (epoll, as many as siolite.LoopsFor says) instead of a reader goroutine each: an idle
// connection then costs the client a few hundred bytes of loop state
// instead of a goroutine's stack and buffered reader, and a drop is seen
// by the loop, as the goroutine's read saw it. A connection is dialled
// (and upgraded, with gobwas/ws) as before, then enrolled; the loop
// answers the target's pings, reads and drops what else it sends, and
// ends the connection on its close frame. TLS connections stay on their
// goroutines.
type holders struct {
	gnet.BuiltinEventEngine
	cli     *gnet.Client
	enrolls enroll.Gate
}

// loopHold is one connection's state, in its gnet.Conn's context.
type loopHold struct {
	websocket bool
	carry     []byte // bytes read before the loop took over, or a frame cut short
	end       *latch
	closeErr  error // why the loop closed it, when it did
}

// maxHoldFrame bounds a frame the holder waits for whole: an idle
// connection is sent pings and close frames, and a length no target sends
// is not buffered for ever.
const maxHoldFrame = 1 << 20

func newHolders(errs *tally.Errors) (*holders, error) {
	h := &holders{}
	cli, err := gnet.NewClient(h, gnet.WithMulticore(true), gnet.WithNumEventLoop(siolite.LoopsFor(runtime.GOMAXPROCS(0))),
		gnet.WithLogger(tally.GnetLog{Errs: errs}))
	if err == nil {
		err = cli.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("gnet client: %w", err)
	}
	h.cli = cli
	return h, nil
}

func (h *holders) stop() { _ = h.cli.Stop() }

// hold enrolls c, with what br already read past the upgrade (nil for
// TCP), and returns it as held: its end goes to the watcher once.
func (h *holders) hold(c net.Conn, br *bufio.Reader, websocket bool) (held, error) {
	lh := &loopHold{websocket: websocket, end: &latch{}}
	if br != nil {
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			lh.carry = append([]byte(nil), b...)
		}
	}
	g, err := h.enrolls.Enroll(h.cli, c, lh)
	if err != nil {
		return held{}, err
	}
	return held{
		close: func() {
			if websocket {
				bye := wsframe.ClientFrame(ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))
				_ = g.AsyncWrite(bye, nil)
			}
			// After the write above: the loop runs its tasks in order.
			_ = g.Close()
		},
		watch: lh.end.watch,
	}, nil
}

// OnOpen reads what came with the upgrade.
func (h *holders) OnOpen(g gnet.Conn) ([]byte, gnet.Action) {
	lh := g.Context().(*loopHold)
	if len(lh.carry) == 0 {
		return nil, gnet.None
	}
	used, action := lh.frames(g, lh.carry)
	lh.carry = lh.carry[used:]
	return nil, action
}

// OnTraffic reads what has come: pings are answered, a close frame ends
// the connection, the rest is dropped.
func (h *holders) OnTraffic(g gnet.Conn) gnet.Action {
	lh := g.Context().(*loopHold)
	buf, err := g.Next(-1)
	if err != nil || !lh.websocket {
		return gnet.None
	}
	if len(lh.carry) > 0 {
		buf = append(lh.carry, buf...)
	}
	used, action := lh.frames(g, buf)
	lh.carry = append(lh.carry[:0], buf[used:]...) // the loop reuses buf
	return action
}

// frames handles the whole frames at the start of buf and returns the
// bytes they took.
func (lh *loopHold) frames(g gnet.Conn, buf []byte) (int, gnet.Action) {
	used := 0
	for used < len(buf) {
		hd, payload, n, err := wsframe.Next(buf[used:], maxHoldFrame)
		if err != nil {
			lh.closeErr = fmt.Errorf("a frame the client cannot read: %w", err)
			return len(buf), gnet.Close
		}
		if n == 0 {
			return used, gnet.None // the rest of the frame is on its way
		}
		used += n
		switch hd.OpCode {
		case ws.OpPing:
			_, _ = g.Write(wsframe.ClientFrame(ws.OpPong, payload))
		case ws.OpClose:
			lh.closeErr = closeError(payload)
			_, _ = g.Write(wsframe.ClientFrame(ws.OpClose, payload))
			return len(buf), gnet.Close
		}
	}
	return used, gnet.None
}

// closeError is a close frame's code and reason as the error gobwas/ws's
// readers return for it.
func closeError(payload []byte) error {
	if len(payload) < 2 {
		return wsutil.ClosedError{Code: ws.StatusNoStatusRcvd}
	}
	code, reason := ws.ParseCloseFrameData(payload)
	return wsutil.ClosedError{Code: code, Reason: reason}
}

// OnClose passes the connection's end on.
func (h *holders) OnClose(g gnet.Conn, err error) gnet.Action {
	lh := g.Context().(*loopHold)
	if lh.closeErr != nil {
		err = lh.closeErr
	}
	if err == nil {
		err = net.ErrClosed
	}
	lh.end.fire(err)
	return gnet.None
}

// latch hands a connection's end to its watcher once, whether the end
// comes before the watcher is set or after.
type latch struct {
	mu    sync.Mutex
	fired bool
	err   error
	fn    func(error)
}

func (l *latch) fire(err error) {
	l.mu.Lock()
	if l.fired {
		l.mu.Unlock()
		return
	}
	l.fired, l.err = true, err
	fn := l.fn
	l.mu.Unlock()
	if fn != nil {
		fn(err)
	}
}

func (l *latch) watch(fn func(error)) {
	l.mu.Lock()
	l.fn = fn
	fired, err := l.fired, l.err
	l.mu.Unlock()
	if fired {
		fn(err)
	}
}

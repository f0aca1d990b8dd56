package conns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/zishang520/socket.io/clients/socket/v3"

	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/loadgen/siolite"
)

// enginePath, on a -url, names a Socket.IO target. A bare WebSocket there
// would open an Engine.IO session and never join a namespace, which a
// Socket.IO server does not count as a handshake and drops once its
// -connect-timeout runs out; so conns holds Socket.IO sockets there
// instead.
const enginePath = target.EnginePath

// sioTarget is a Socket.IO -url taken apart for the Socket.IO client.
type sioTarget struct {
	base      string // http[s]://HOST:PORT
	transport string // sioclient.WebSocket or sioclient.Polling
}

// socketIOTarget reads a ws[s]:// URL on enginePath: ok is false for any
// other URL. Its query may give EIO=4 (the only protocol the client
// speaks) and transport=websocket or polling (default websocket).
func socketIOTarget(u target.URL) (t sioTarget, ok bool, err error) {
	if !u.SocketIO() {
		return t, false, nil
	}
	p, err := url.Parse(u.String)
	if err != nil {
		return t, false, nil
	}
	q := p.Query()
	if eio := q.Get("EIO"); eio != "" && eio != "4" {
		return t, true, fmt.Errorf("invalid value %q for flag -url: EIO=%s: the Socket.IO client speaks Engine.IO 4 (EIO=4) only", u.String, eio)
	}
	t.transport = sioclient.WebSocket
	switch tr := q.Get("transport"); tr {
	case "", sioclient.WebSocket:
	case sioclient.Polling:
		t.transport = sioclient.Polling
	default:
		return t, true, fmt.Errorf("invalid value %q for flag -url: transport=%s: want websocket or polling", u.String, tr)
	}
	scheme := "http"
	if u.TLS {
		scheme = "https"
	}
	t.base = scheme + "://" + u.Addr
	return t, true, nil
}

// sioOptions are one Socket.IO connection's: its Engine.IO open inside
// the client bounded past -timeout, so that the context given to Wait
// (-timeout, the namespace CONNECT included) decides.
func (r *run) sioOptions() sioclient.Options {
	return sioclient.Options{URL: r.sio.base, Namespace: r.cfg.Namespace, Transport: r.sio.transport,
		OpenTimeout: r.cfg.Timeout + time.Second, TLS: r.cfg.TLS.Config(), Workers: r.workers}
}

// dialSocketIO opens one Socket.IO socket: the Engine.IO open and the
// namespace CONNECT, both within -timeout. The client answers the
// target's pings on its own, so that a long -hold is not ended by the
// target's ping timeout; read returns when the socket disconnects.
func (r *run) dialSocketIO(ctx context.Context) (held, error) {
	gone := make(chan string, 1)
	opts := r.sioOptions()
	opts.OnSocket = func(s *socket.Socket) {
		s.Once("disconnect", func(args ...any) {
			reason := "disconnect"
			if len(args) > 0 {
				reason = fmt.Sprint(args[0])
			}
			gone <- reason
		})
	}
	c, err := sioclient.Dial(opts)
	if err != nil {
		return held{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if err := c.Wait(wctx); err != nil {
		_ = c.Close()
		return held{}, sioError(err)
	}
	return held{
		close: func() { _ = c.Close() },
		watch: onGoroutine(func() error { return errors.New(<-gone) }),
	}, nil
}

// dialLean opens one Socket.IO socket with the lean client, read on the
// run's loop: the Engine.IO open and the namespace CONNECT within
// -timeout, from src when -sources gives one. The loop answers the
// target's pings.
func (r *run) dialLean(ctx context.Context, src netip.Addr) (held, error) {
	end := &latch{}
	o := siolite.Options{URL: r.sio.base, Namespace: r.cfg.Namespace, Loop: r.sioLoop, OnClose: end.fire}
	if src.IsValid() {
		o.NetDial = target.NetDialer(src, 0).DialContext
	}
	dctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	c, err := siolite.Dial(dctx, o)
	if errors.Is(err, siolite.ErrDeadline) {
		err = fmt.Errorf("%w: %w", err, context.DeadlineExceeded)
	}
	if err != nil {
		return held{}, err
	}
	return held{
		close: func() { _ = c.Close(); end.fire(net.ErrClosed) },
		watch: end.watch,
	}, nil
}

// sioError gives a failed connect the kind the report tallies it by:
// the client's own deadline is a timeout like a dial's.
func sioError(err error) error {
	if errors.Is(err, sioclient.ErrDeadline) {
		return fmt.Errorf("%w: %w", err, context.DeadlineExceeded)
	}
	return err
}

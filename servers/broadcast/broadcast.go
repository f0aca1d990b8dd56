// Package broadcast is the fan-out target (variants broadcast-gorilla,
// broadcast-coder, broadcast-gnet), speaking the echo/broadcast protocol of
// hashrocket/websocket-shootout (shared/protocol/broadcast.go) with a timed
// push (-push-interval, -push-size).
//
// The hub (hub.go) is library-neutral: membership, fan-out, the slow-client
// policy (-slow drop|close), and the push ticker. The libraries sit behind
// servers/internal/wsserver, whose send queue (-send-queue) gives each connection
// exactly one writer: a client that does not read fills only its own queue.
//
// The protocol as a client sees it, and the cluster's promises with -redis,
// are in servers/README.md.
package broadcast

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Options are the broadcast targets' settings.
type Options struct {
	WebSocket    wsserver.Settings
	Slow         string        // -slow: drop or close a client whose queue is full
	SendQueue    int           // -send-queue: each connection's, in messages
	PushInterval time.Duration // -push-interval: the timed push (0 = off)
	PushSize     int           // -push-size: its payload, in bytes
	Redis        string        // -redis: the cluster's Redis URL (empty = one process)
}

// New builds broadcast-LIB on one of variants.WebSocketLibraries. m may be
// nil (-metrics=false).
func New(lib variants.Library) func(Options, *metrics.Metrics, *slog.Logger) (lifecycle.Target, error) {
	return func(o Options, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		return newTarget(o, m, log, wsserver.For(lib))
	}
}

type serveFunc = wsserver.Build

// target is a wsserver target plus the push ticker.
type target struct {
	lifecycle.Target
	hub *Hub
	cfg Options
	bus *cluster.Bus // nil without -redis

	mu      sync.Mutex
	stopped bool
	stop    context.CancelFunc
	ctx     context.Context
	pusher  sync.WaitGroup
	// The push running (-push-interval, or POST /control/push): its
	// settings, and how to stop it alone.
	pushing  control.Push
	stopPush context.CancelFunc
	pushDone chan struct{} // closed when the push running has stopped
}

func newTarget(cfg Options, m *metrics.Metrics, log *slog.Logger, serve serveFunc) (lifecycle.Target, error) {
	hub := NewHub(cfg.Slow, m)
	var (
		r   *cluster.Redis
		bus *cluster.Bus
	)
	if cfg.Redis != "" {
		var err error
		if r, err = cluster.Dial(cfg.Redis, m, log); err != nil {
			return nil, err
		}
		bus = cluster.NewBus(r, m, func(frame []byte) int { return hub.Send(wsserver.NewOutgoing(frame)) })
	}
	inner, err := serve(cfg.WebSocket, m, log, wsserver.Options{Handler: &handler{hub: hub, m: m, bus: bus}, Queue: cfg.SendQueue})
	if err != nil {
		if bus != nil {
			bus.Close()
			_ = r.Close()
		}
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	t := &target{Target: inner, hub: hub, cfg: cfg, bus: bus, ctx: ctx, stop: stop}
	if r != nil {
		return &clusterTarget{target: t, r: r}, nil
	}
	return t, nil
}

// clusterTarget is a target that is one replica of a cluster (-redis): it
// says whether Redis answers (admin.RedisState, for /health) and leaves
// the cluster on Shutdown.
type clusterTarget struct {
	*target
	r *cluster.Redis
}

func (t *clusterTarget) RedisState() string { return t.r.RedisState() }

// Shutdown stops the push and the connections, then leaves the cluster.
func (t *clusterTarget) Shutdown(ctx context.Context) error {
	err := t.target.Shutdown(ctx)
	t.bus.Close()
	_ = t.r.Close()
	return err
}

// Serve starts the push (with -push-interval) and serves until Shutdown.
func (t *target) Serve(ln net.Listener) error {
	if t.cfg.PushInterval > 0 {
		_, _ = t.SetPush(control.Push{On: true})
	}
	return t.Target.Serve(ln)
}

// SetPush starts, changes or stops the timed push (POST /control/push); a
// push started again numbers from 1.
func (t *target) SetPush(p control.Push) (control.Push, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return t.pushing, control.ErrStopped
	}
	if t.stopPush != nil {
		// The old push ends before the new one starts: a client never
		// sees two numberings at once.
		t.stopPush()
		<-t.pushDone
		t.stopPush = nil
	}
	t.pushing = control.Push{}
	if !p.On {
		return t.pushing, nil
	}
	p = p.Defaults(t.cfg.PushInterval, t.cfg.PushSize)
	ctx, stop := context.WithCancel(t.ctx)
	done := make(chan struct{})
	t.pushing, t.stopPush, t.pushDone = p, stop, done
	t.pusher.Go(func() {
		defer close(done)
		if t.bus != nil {
			t.bus.Push(ctx, p.Interval, func() (string, string) { return t.pushFrame(p.Size) })
		} else {
			t.push(ctx, p)
		}
	})
	return p, nil
}

// Shutdown stops the push, then the connections.
func (t *target) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	t.stopped = true
	t.stop()
	t.mu.Unlock()
	t.pusher.Wait()
	return t.Target.Shutdown(ctx)
}

// push sends every client a numbered, timestamped message every
// -push-interval. seq goes up by one per push whoever receives it, so a
// client that sees a gap in seq has lost messages (-slow drop). A tick
// missed because a fan-out ran long is skipped, not made up.
func (t *target) push(ctx context.Context, p control.Push) {
	ticker := time.NewTicker(p.Interval)
	defer ticker.Stop()
	filler := strings.Repeat("x", p.Size)
	var buf []byte
	for seq := uint64(1); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		buf = protocol.AppendPush(buf[:0], seq, time.Now().UnixNano(), filler)
		t.hub.Send(wsserver.NewOutgoing(append([]byte(nil), buf...)))
	}
}

// pushFrame is a push made now, before and after its seq, for the
// cluster's push (cluster.Bus.Push), which numbers it and sends it to
// every replica.
func (t *target) pushFrame(size int) (head, tail string) {
	return protocol.PushHead, string(protocol.AppendPushTail(nil, time.Now().UnixNano(), strings.Repeat("x", size)))
}

// Faults is the WebSocket layer's injector of the known-bad modes
// (control.Faulter, POST /control/fault).
func (t *target) Faults() *faults.Injector {
	if f, ok := t.Target.(control.Faulter); ok {
		return f.Faults()
	}
	return nil
}

// Drop drops clients of the WebSocket layer's target (POST /control/drop):
// each leaves the hub as any client that goes does.
func (t *target) Drop(fraction float64, how control.How) (int, int) {
	if d, ok := t.Target.(control.Dropper); ok {
		return d.Drop(fraction, how)
	}
	return 0, 0
}

package sioengine

import (
	"bytes"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// handOverPeer records what a session hands to its loop; the rest of
// LoopPeer is not used by writeFrames.
type handOverPeer struct {
	wsserver.LoopPeer
	handed [][]byte
}

func (p *handOverPeer) WriteFrames(b []byte) error {
	p.handed = append(p.handed, b)
	return nil
}

// TestLoopWritesShareTheBroadcastFrame: on gnet a broadcast's frame is
// framed once, and every session hands the very same bytes to its loop;
// a session's own frames around it are framed into one buffer each side
// of it, and the order on the wire is the order they were queued in.
func TestLoopWritesShareTheBroadcastFrame(t *testing.T) {
	shared := encodeEvent("/", "news", -1, nil, nil, true)[0]
	own := func(s string) *frame { return &frame{data: []byte(s)} }
	a, b := &handOverPeer{}, &handOverPeer{}
	if err := (&loopWS{p: a}).writeFrames([]*frame{own("40"), own("3"), shared, own("42[1]")}); err != nil {
		t.Fatal(err)
	}
	if err := (&loopWS{p: b}).writeFrames([]*frame{shared}); err != nil {
		t.Fatal(err)
	}
	if len(a.handed) != 3 || len(b.handed) != 1 {
		t.Fatalf("hand-overs: %d and %d, want 3 and 1", len(a.handed), len(b.handed))
	}
	if &a.handed[1][0] != &b.handed[0][0] {
		t.Error("the broadcast's frame was copied for a session, not shared")
	}
	var want []byte
	for _, s := range []string{"40", "3", `42["news"]`, "42[1]"} {
		want = wsframe.AppendFrame(want, 0, ws.OpText, []byte(s))
	}
	if got := bytes.Join(a.handed, nil); !bytes.Equal(got, want) {
		t.Errorf("on the wire %q, want %q", got, want)
	}
}

// startOnLoops serves an engine of o on wsserver's gnet loops, as the
// -engine native-gnet targets do; its URL opens WebSocket sessions.
func startOnLoops(t *testing.T, o Options) (*Server, string) {
	t.Helper()
	s := New(o)
	build := func(cfg config.Config, _ *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		layer := wsserver.Settings{
			Name: "native-gnet", MaxMessage: cfg.MaxMessage, PingInterval: cfg.PingInterval, PingTimeout: cfg.PingTimeout,
			HTTP: lifecycle.HTTPLimits{Header: cfg.HandshakeTimeout, HeaderBytes: cfg.MaxHeaderBytes, Idle: cfg.IdleTimeout, Body: cfg.BodyTimeout},
		}
		return wsserver.NewGnet(layer, nil, log, wsserver.Options{Front: s, NoKeepalive: true})
	}
	tg := lifecycletest.Start(t, "native-gnet", build, lifecycletest.Options{})
	t.Cleanup(func() {
		ctx, cancel := contextTimeout(2 * time.Second)
		defer cancel()
		s.Close(ctx)
	})
	return s, "ws://" + tg.Addr + "/socket.io/?EIO=4&transport=websocket"
}

// timerRun is a run of one of a session's timers, as a test saw it.
type timerRun struct {
	c     *Conn
	timer string // "heartbeat" or "connect"
	g     uint64 // the goroutine it ran on
	at    time.Time
}

// watchTimers has every run of c's two timers reported on runs, and
// reports on armed whether they were both armed, not yet due, when it
// did so. Called in Hooks.Opened, on the session's loop before its
// timers are armed: what it queues there runs after they are (the loop's
// tasks run in order), and before a tick runs them unless the loop was
// held up past their time.
func watchTimers(c *Conn, armed chan<- bool, runs chan<- timerRun) {
	w := c.timers.(*wheel)
	queued := w.loop.Execute(func() {
		c.mu.Lock()
		timers := map[string]*wheelTimer{"heartbeat": c.heartbeat.(*wheelTimer), "connect": c.connectTmr.(*wheelTimer)}
		c.mu.Unlock()
		ok := true
		for name, t := range timers {
			w.mu.Lock()
			ok = ok && t.w == w && t.state == timerArmed
			w.mu.Unlock()
			// f is read on the loop only, where this runs.
			f := t.f
			t.f = func() {
				runs <- timerRun{c: c, timer: name, g: goid(), at: time.Now()}
				f()
			}
		}
		armed <- ok
	})
	if !queued {
		armed <- false
	}
}

// goid is the id of the goroutine it runs on.
func goid() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	id, _ := strconv.ParseUint(strings.Fields(strings.TrimPrefix(string(buf[:n]), "goroutine "))[0], 10, 64)
	return id
}

// TestLoopTimersRunOnTheLoop: a gnet session's heartbeat and connect
// timeout are timers of its loop's wheel, and their functions run on the
// loop's goroutine, the one that serves the session's messages (so never
// beside them), not on a goroutine of their own; what the client sees is
// as on net/http: a ping after pingInterval and the close pingTimeout
// later without a pong, and a session that joins no namespace closed
// after connectTimeout, never sooner.
func TestLoopTimersRunOnTheLoop(t *testing.T) {
	o := testOptions()
	o.PingInterval, o.PingTimeout, o.ConnectTimeout = 200*time.Millisecond, 300*time.Millisecond, 600*time.Millisecond
	type opening struct {
		c     *Conn
		g     uint64
		at    time.Time
		armed chan bool
	}
	opened := make(chan opening, 1)
	runs := make(chan timerRun, 16)
	type closing struct {
		c      *Conn
		reason string
		g      uint64
	}
	closed := make(chan closing, 8)
	o.Hooks.Opened = func(c *Conn, _ *http.Request) {
		op := opening{c: c, g: goid(), at: time.Now(), armed: make(chan bool, 1)}
		watchTimers(c, op.armed, runs)
		opened <- op
	}
	o.Hooks.Closed = func(c *Conn, reason string) { closed <- closing{c, reason, goid()} }
	s, url := startOnLoops(t, o)

	// open dials a session whose timers are watched: again if they came
	// due before the watch began (a loop held up that long), which never
	// happens on a loop that keeps up.
	open := func() (*websocket.Conn, opening) {
		for attempt := 1; ; attempt++ {
			ws, _, err := websocket.DefaultDialer.Dial(url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ws.Close() })
			op := <-opened
			if <-op.armed {
				c := op.c
				c.mu.Lock()
				loop := c.ws.(*loopWS).p.Loop()
				c.mu.Unlock()
				if c.timers != s.wheelOf(loop) {
					t.Fatal("the session's timers are not its loop's wheel")
				}
				return ws, op
			}
			if attempt == 3 {
				t.Fatal("three sessions' timers came due before they could be watched")
			}
			ws.Close()
			for cl := range closed {
				if cl.c == op.c {
					break
				}
			}
			drainRuns(runs)
		}
	}
	// takeRun is the next run of a watched timer, which must be of op's
	// session, on its loop.
	takeRun := func(op opening) timerRun {
		t.Helper()
		r := <-runs
		if r.c != op.c {
			t.Fatalf("a run of the %s timer of another session", r.timer)
		}
		if r.g != op.g {
			t.Fatalf("the %s timer ran on goroutine %d, not on its loop's %d", r.timer, r.g, op.g)
		}
		return r
	}

	// The heartbeat: a ping, then the close, both from the loop.
	ws, op := open()
	if got := readRaw(t, ws); !strings.HasPrefix(got, "0{") {
		t.Fatalf("first message %q, want the open packet", got)
	}
	writeWS(t, ws, "40")
	// The ack, and the ping (left unanswered), in either order.
	for acked, pinged := false, false; !acked || !pinged; {
		switch got := readRaw(t, ws); {
		case strings.HasPrefix(got, "40{") && !acked:
			acked = true
		case got == "2" && !pinged:
			pinged = true
		default:
			t.Fatalf("got %q, want the CONNECT's ack and one ping", got)
		}
	}
	ping := takeRun(op)
	if ping.timer != "heartbeat" || ping.at.Sub(op.at) < o.PingInterval {
		t.Fatalf("first timer run: the %s timer %v after the open, want the heartbeat at pingInterval %v or later",
			ping.timer, ping.at.Sub(op.at), o.PingInterval)
	}
	timeout := takeRun(op)
	if timeout.timer != "heartbeat" || timeout.at.Sub(ping.at) < o.PingTimeout {
		t.Fatalf("second timer run: the %s timer %v after the ping, want the heartbeat at pingTimeout %v or later",
			timeout.timer, timeout.at.Sub(ping.at), o.PingTimeout)
	}
	if cl := <-closed; cl.c != op.c || cl.reason != "ping timeout" || cl.g != op.g {
		t.Fatalf("closed with %q on goroutine %d, want ping timeout on the loop's %d", cl.reason, cl.g, op.g)
	}
	closedWith(t, ws)

	// The connect timeout: a session that answers pings but joins no
	// namespace.
	ws, op = open()
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if string(data) == "2" {
				_ = ws.WriteMessage(websocket.TextMessage, []byte("3"))
			}
		}
	}()
	for {
		r := takeRun(op)
		if r.timer == "heartbeat" {
			continue // a ping, answered
		}
		if d := r.at.Sub(op.at); d < o.ConnectTimeout {
			t.Fatalf("the connect timeout ran %v after the open, before connectTimeout %v", d, o.ConnectTimeout)
		}
		break
	}
	if cl := <-closed; cl.c != op.c || cl.reason != "forced close" || !op.c.ServerClosed() {
		t.Fatalf("closed with %q (by the server %v), want forced close", cl.reason, op.c.ServerClosed())
	}
	<-pumped
}

// readRaw is the next message, a ping too.
func readRaw(t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(data)
}

// drainRuns empties runs of what a session left there.
func drainRuns(runs chan timerRun) {
	for {
		select {
		case <-runs:
		default:
			return
		}
	}
}

// TestAckedBeforeTheConnectedHook: a middleware may end on a goroutine of
// its own (the async model's timer), whose Connected hook then runs after
// the ack was written: on gnet, at once, under the session's lock. A
// client may read the ack and leave before the hook runs; the Closed hook
// must still see that the ack was made, or the handshake is counted as
// abandoned.
func TestAckedBeforeTheConnectedHook(t *testing.T) {
	for _, onLoops := range []bool{false, true} {
		t.Run(map[bool]string{false: "net/http", true: "gnet"}[onLoops], func(t *testing.T) {
			o := testOptions()
			o.Hooks.Connecting = func(_ *Socket, next func(error)) { go next(nil) }
			hookMay := make(chan struct{})
			o.Hooks.Connected = func(*Socket) { <-hookMay }
			acked := make(chan time.Time, 1)
			o.Hooks.Closed = func(c *Conn, _ string) { acked <- c.AckedAt() }
			var url string
			if onLoops {
				_, url = startOnLoops(t, o)
			} else {
				e := startEngine(t, o)
				url = "ws" + strings.TrimPrefix(e.url, "http") + "&transport=websocket"
			}
			defer close(hookMay)
			before := time.Now()
			ws, _, err := websocket.DefaultDialer.Dial(url, nil)
			if err != nil {
				t.Fatal(err)
			}
			readRaw(t, ws) // the open packet
			if err := ws.WriteMessage(websocket.TextMessage, []byte("40")); err != nil {
				t.Fatal(err)
			}
			if ack := readRaw(t, ws); !strings.HasPrefix(ack, "40{") {
				t.Fatalf("CONNECT ack %q", ack)
			}
			ws.Close() // while the Connected hook waits
			select {
			case at := <-acked:
				if at.Before(before) || at.After(time.Now()) {
					t.Errorf("the Closed hook saw AckedAt %v, want the ack's time (after %v)", at, before)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the session was not closed while its Connected hook waited")
			}
		})
	}
}

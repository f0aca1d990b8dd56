package socketio_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/internal/settings"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// blockingModels are -blocking-model's values.
var blockingModels = []string{config.BlockingAsyncio, config.BlockingNode}

// forModels runs test once on each engine (net/http; gnet refuses the
// blocking variant) and each blocking model, as parallel subtests.
func forModels(t *testing.T, test func(t *testing.T, engine, model string)) {
	t.Parallel()
	for _, engine := range engines {
		for _, model := range blockingModels {
			t.Run(engine+"/"+model, func(t *testing.T) {
				t.Parallel()
				test(t, engine, model)
			})
		}
	}
}

// startBlocking runs a blocking target with the given model and delay.
func startBlocking(t *testing.T, engine, model string, delay time.Duration) *target {
	return start(t, engine, socketio.Blocking, func(c *config.Config) {
		c.SocketIO.BlockingModel, c.SocketIO.Delay = model, delay
	})
}

// holds is how many connect handlers have held the target's loop.
func holds(tg *target) uint64 {
	s := tg.metrics.Snapshot()
	return s.LoopHolds[metrics.HoldPresent] + s.LoopHolds[metrics.HoldGone]
}

// timedConnect opens a session, joins the main namespace and returns how
// long the CONNECT took.
func timedConnect(t *testing.T, tg *target) time.Duration {
	t.Helper()
	conn, _ := rawOpen(t, tg)
	defer conn.Close()
	began := time.Now()
	send(t, conn, "40")
	if ack := readText(t, conn); !strings.HasPrefix(ack, "40{") {
		t.Fatalf("CONNECT answered %q", ack)
	}
	return time.Since(began)
}

// TestBlockingFreezesTheLoop: while a connect handler holds the loop,
// nothing else the target serves moves, as on python-socketio and Node:
// an Engine.IO open (WebSocket and polling), a polling POST of a session
// already open, and the events of sockets already connected, over
// WebSocket and polling.
//
// The bound is one no slow machine can break: the handler starts after
// its CONNECT was sent (at sent) and sleeps -delay, and each request below
// is made while it sleeps (the test sees the hold counted first), so none
// can be answered before sent + delay. Were the test itself so late that
// the hold had ended, the answers would come later still.
func TestBlockingFreezesTheLoop(t *testing.T) { forModels(t, testBlockingFreezesTheLoop) }

func testBlockingFreezesTheLoop(t *testing.T, engine, model string) {
	const delay = time.Second
	tg := startBlocking(t, engine, model, delay)
	// Connected before the hold (each waits for its own hold first).
	ws := dial(t, tg.url, "/", []string{"websocket"}, nil)
	polling := dial(t, tg.url, "/", []string{"polling"}, nil)
	sid := pollingSession(t, tg)

	holder, _ := rawOpen(t, tg)
	before := holds(tg)
	sent := time.Now()
	send(t, holder, "40")
	waitFor(t, "the holder's handler to start", func() bool { return holds(tg) > before })

	answered := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	record := func(what string, do func() error) {
		wg.Go(func() {
			if err := do(); err != nil {
				t.Errorf("%s: %v", what, err)
				return
			}
			mu.Lock()
			answered[what] = time.Now()
			mu.Unlock()
		})
	}
	echo := func(c *client) func() error {
		return func() error {
			if got := c.emitAck(t, "echo", "x"); fmt.Sprint(got) != "[x]" {
				return fmt.Errorf("echo ack %v", got)
			}
			return nil
		}
	}
	record("an event over WebSocket", echo(ws))
	record("an event over polling", echo(polling))
	record("a WebSocket open", func() error {
		conn, _, err := websocket.DefaultDialer.Dial(wsURL(tg.url), nil)
		if err != nil {
			return err
		}
		defer conn.Close()
		_, open, err := conn.ReadMessage()
		if err == nil && !strings.HasPrefix(string(open), "0{") {
			err = fmt.Errorf("open packet %q", open)
		}
		return err
	})
	record("a polling open", func() error {
		resp, err := http.Get(tg.url + "/socket.io/?EIO=4&transport=polling")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	record("a polling POST of an open session", func() error {
		if code, body := httpDo(t, http.MethodPost, pollURL(tg, sid), "6"); code != 200 || body != "ok" {
			return fmt.Errorf("POST of a noop answered %d %q", code, body)
		}
		return nil
	})
	wg.Wait()
	if ack := readText(t, holder); !strings.HasPrefix(ack, "40{") {
		t.Errorf("the holder's CONNECT answered %q", ack)
	}
	for what, at := range answered {
		if took := at.Sub(sent); took < delay {
			t.Errorf("%s was answered %v after the handler began holding the loop for %v", what, took, delay)
		}
	}
}

// TestBlockingContract checks the curves servers/README.md promises for
// N connects sent at once on sessions already open. node: the k-th ack
// leaves in the k-th handler's turn, so it comes k x delay or more after
// the CONNECTs were sent, and the first long before the last. asyncio: an
// ack waits for the turns queued when it was made, so every ack of the
// burst leaves after the last handler, N x delay or more after the
// CONNECTs. Lower bounds only, which a slow machine cannot break, but
// for node's first ack, which has N/2 delays of margin.
//
// Not parallel with the other tests: their work on the same cores would
// only lengthen async's longest handshake, which must stay below the
// blocking loop's n delays.
func TestBlockingContract(t *testing.T) {
	for _, engine := range engines {
		for _, model := range blockingModels {
			t.Run(engine+"/"+model, func(t *testing.T) { testBlockingContract(t, engine, model) })
		}
	}
}

func testBlockingContract(t *testing.T, engine, model string) {
	const n, delay = 20, 50 * time.Millisecond
	tg := startBlocking(t, engine, model, delay)
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		conns[i], _ = rawOpen(t, tg)
	}
	begin := time.Now()
	for _, c := range conns {
		send(t, c, "40")
	}
	done := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, ack, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(ack), "40{") {
				t.Errorf("connect %d: %q %v", i, ack, err)
			}
			done[i] = time.Since(begin)
		})
	}
	wg.Wait()
	slices.Sort(done)
	t.Logf("%s: first ack %v, median %v, last %v", model, done[0], done[n/2], done[n-1])
	switch model {
	case config.BlockingNode:
		for k := 1; k <= n; k++ {
			if got, want := done[k-1], time.Duration(k)*delay; got < want {
				t.Errorf("node: ack %d came %v after the CONNECTs, want >= %v", k, got, want)
			}
		}
		if done[0] >= n/2*delay {
			t.Errorf("node: the first ack came %v after the CONNECTs, want it in its own turn, long before %v", done[0], n/2*delay)
		}
	case config.BlockingAsyncio:
		if done[0] < n*delay {
			t.Errorf("asyncio: the first ack came %v after the CONNECTs, want every ack after the whole burst, >= %v", done[0], n*delay)
		}
	}

	// On async nothing waits for anything else: the longest handshake the
	// server saw is a fraction of the blocking loop's.
	blockingMax := tg.metrics.Snapshot().HandshakeLatency.Max
	async := start(t, engine, socketio.Async, func(c *config.Config) { c.SocketIO.Delay = delay })
	var awg sync.WaitGroup
	for range n {
		awg.Go(func() {
			if _, err := connect(t, async.url, "/", []string{"websocket"}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	awg.Wait()
	waitFor(t, "async handshakes", func() bool { return async.metrics.Snapshot().Handshakes[protocol.ResultOK] == n })
	asyncMax := async.metrics.Snapshot().HandshakeLatency.Max
	// The bounds: the loop held n delays before the last ack, however
	// fast the machine; async's connects overlap, so its longest is far
	// below that (a delay or two on an idle machine; the margin of
	// n - 1 delays is for a loaded one).
	if whole := (n * delay).Seconds(); blockingMax < whole || asyncMax >= whole {
		t.Errorf("longest handshake %.3fs on blocking, %.3fs on async; want >= %.3fs on blocking and below it on async", blockingMax, asyncMax, whole)
	}
}

// TestBlockingRepeatedConnects: a session that writes 400 CONNECTs at once
// holds one place in the loop, not 400 (20 s at 50 ms each): it is closed
// after a few repeats, and the next client connects in a few delays.
func TestBlockingRepeatedConnects(t *testing.T) { forModels(t, testBlockingRepeatedConnects) }

func testBlockingRepeatedConnects(t *testing.T, engine, model string) {
	const delay = 50 * time.Millisecond
	tg := startBlocking(t, engine, model, delay)

	attacker, _ := rawOpen(t, tg)
	for range 400 {
		if err := attacker.WriteMessage(websocket.TextMessage, []byte("40")); err != nil {
			break // closed by the server already
		}
	}
	waitClosed(t, attacker)
	// The margin: the victim waits at most for the attacker's one turn and
	// its own; 20 delays leave room for a loaded machine, and the old
	// queue (400 delays) cannot fit in them.
	if took := timedConnect(t, tg); took > 20*delay {
		t.Errorf("a connect after the attacker took %v, want < %v (20 delays)", took, 20*delay)
	}

	// Within the bound, a repeated CONNECT is answered as Node answers it:
	// read while the first waits, a second ack after the same turn; read
	// once the first was answered (its own frame, which the frozen loop
	// reads in a turn of its own), the session is closed, as Node closes
	// one that repeats a CONNECT once joined.
	conn, _ := rawOpen(t, tg)
	send(t, conn, "40")
	send(t, conn, "40")
	if ack := readText(t, conn); !strings.HasPrefix(ack, "40{") {
		t.Errorf("the first CONNECT answered %q", ack)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, second, err := conn.ReadMessage(); err == nil && !strings.HasPrefix(string(second), "40{") {
		t.Errorf("the repeated CONNECT answered %q, want a second ack or the session closed", second)
	} else if err != nil && strings.Contains(err.Error(), "timeout") {
		t.Error("the repeated CONNECT got neither an ack nor a close within 5 s")
	}
}

// TestBlockingLeaversStillHold: as on python-socketio and Node, the
// handler of a connect whose client left while it waited still runs when
// its turn comes, holding the loop, and is counted.
func TestBlockingLeaversStillHold(t *testing.T) { forModels(t, testBlockingLeaversStillHold) }

func testBlockingLeaversStillHold(t *testing.T, engine, model string) {
	const delay, leavers = 200 * time.Millisecond, 3
	tg := startBlocking(t, engine, model, delay)
	conns := make([]*websocket.Conn, leavers)
	for i := range conns {
		conns[i], _ = rawOpen(t, tg)
	}
	for _, c := range conns {
		send(t, c, "40")
		c.Close()
	}
	want := map[string]uint64{protocol.ResultAbandoned: leavers, protocol.ResultOK: 0}
	waitFor(t, fmt.Sprintf("handshakes %v", want), func() bool { return equalCounts(tg.metrics.Snapshot().Handshakes, want) })
	waitFor(t, fmt.Sprintf("%d holds", leavers), func() bool { return holds(tg) == leavers })
	if took := timedConnect(t, tg); took < delay {
		t.Errorf("a connect took %v, want its own hold, >= %v", took, delay)
	}
}

// TestBlockingRefusedOnGnet: gnet's event loops, which serve many
// connections each and never block, cannot be the blocking model's loop.
func TestBlockingRefusedOnGnet(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Variant = string(socketio.Blocking)
	cfg.SocketIO.Engine = config.EngineNativeGnet
	_, err := socketio.New(socketio.Blocking, settings.SocketIO(cfg), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "-engine native") {
		t.Errorf("New(blocking, -engine native-gnet) = %v, want an error naming -engine native", err)
	}
}

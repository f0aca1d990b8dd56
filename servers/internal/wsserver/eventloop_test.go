package wsserver_test

import (
	"bytes"
	"net"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
	"github.com/knowngood/knowngood/shared/wstest"
)

// TestGnetBurstLeavesFewWorkers: a burst of connections to gnet all
// upgrade, and leave at most a few of gnet's pool workers behind. Each
// registration holds a worker until the loop has opened its connection,
// and the pool keeps an idle worker, with its stack, for 10 s: with the
// registrations unbounded, a burst left one idle worker per connection
// still waiting, hundreds of them, a large part of an idle connection's
// memory (scripts/bench/README.md, bench-conns).
func TestGnetBurstLeavesFewWorkers(t *testing.T) {
	const (
		burst = 400
		// The target allows 16 registrations at once; the pool may start a
		// few more while its idle ones are being handed back.
		most = 24
	)
	before := antsWorkers(t) // idle ones from other tests, which the burst may reuse
	tg := start(t, "gnet", gnetEcho, nil)
	conns := make([]*rawConn, burst)
	for i := range conns { // all requests out before any answer is read
		conns[i] = dialTCP(t, tg.Addr)
		conns[i].write([]byte(wstest.UpgradeRequest()))
	}
	for i, rc := range conns {
		if resp := rc.response(); resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("connection %d: %s", i, resp.Status)
		}
	}
	if n := tg.Stats().ConnectionsActive; n != burst {
		t.Fatalf("%d connections active, want %d", n, burst)
	}
	if n := antsWorkers(t); n-before > most {
		t.Errorf("%d of gnet's pool workers after a burst of %d connections (%d before), want at most %d more", n, burst, before, most)
	}
}

// antsWorkers counts the goroutines of gnet's worker pool, busy or idle.
func antsWorkers(t *testing.T) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	return strings.Count(b.String(), "ants/v2.(*goWorker).run.func1(")
}

// syncBuffer is a log destination safe for the target's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGnetLoops: -loops sets the number of event loops, and connections
// spread over them are all served; gnet's own log lines go to the target's
// logger at debug level. Not in parallel: gnet keeps one logger for the
// whole process, set by each engine as it starts, so another test's target
// starting at the same moment would take this one's line.
func TestGnetLoops(t *testing.T) {
	var log syncBuffer
	tg := lifecycletest.Start(t, "gnet", gnetEcho, lifecycletest.Options{Tweak: func(c *config.Config) { c.Gnet.Loops = 3; c.LogLevel = "debug" }, Log: &log})
	var conns []*websocket.Conn
	for range 7 {
		conn, _, err := websocket.DefaultDialer.Dial(tg.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	for i, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		msg := []byte(strings.Repeat("x", i+1))
		if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
		if _, got, err := conn.ReadMessage(); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("connection %d: %q, %v", i, got, err)
		}
	}
	if !strings.Contains(log.String(), "Launching gnet with 3 event-loops") {
		t.Errorf("gnet did not say it runs 3 event loops; log:\n%s", log.String())
	}
}

// TestGnetSlowReader: gnet cannot stop reading from a client that does not
// read its echoes (gorilla and coder do, and TCP pushes back); past 16
// messages of -max-message waiting (at least 1 MiB) it closes with 1008
// rather than buffer without end.
func TestGnetSlowReader(t *testing.T) {
	t.Parallel()
	tg := start(t, "gnet", gnetEcho, func(c *config.Config) { c.MaxMessage = 64 << 10 })
	before := tg.Stats()
	rc := dialTCP(t, tg.Addr)
	_ = rc.c.(*net.TCPConn).SetReadBuffer(64 << 10)
	rc.upgrade()
	frame, err := ws.CompileFrame(ws.MaskFrame(ws.NewBinaryFrame(wstest.Payload(64 << 10))))
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 256 && err == nil; i++ { // 16 MiB, more than the kernel buffers
			_, err = rc.c.Write(frame)
		}
		sent <- err
	}()
	if err := <-sent; err != nil {
		t.Fatalf("the server stopped reading: %v", err)
	}
	rc.expectClose(1008)
	check(t, "disconnects 1008", protocol.Diff(before, tg.Settled(t)).Disconnects["1008"], 1)
}

package wsserver_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/wsframe"
	"github.com/knowngood/knowngood/shared/wstest"
)

// frontEcho is an Options.Front: /ws upgrades, and each message comes
// back through WriteFrames from another goroutine ("loop" from a task of
// the connection's Loop); "bye" gets "last", then the close without a
// status code. Any other request is answered 418.
type frontEcho struct{}

func (frontEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	up, ok := w.(wsserver.LoopUpgrader)
	if r.URL.Path != "/ws" || !ok {
		http.Error(w, "teapot", http.StatusTeapot)
		return
	}
	up.UpgradeOnLoop(func(p wsserver.LoopPeer) wsserver.Session { return &frontSession{p: p} })
}

type frontSession struct {
	wsserver.NopSession
	p wsserver.LoopPeer
}

func (s *frontSession) Message(_ wsserver.Op, data []byte) {
	bye := string(data) == "bye"
	if bye {
		data = []byte("last")
	}
	frame := wsframe.AppendFrame(nil, 0, ws.OpText, data)
	if string(data) == "loop" {
		if !s.p.Loop().Execute(func() { _ = s.p.WriteFrames(frame) }) {
			panic("the loop of an open connection refused a task")
		}
		return
	}
	go func() {
		_ = s.p.WriteFrames(frame)
		if bye {
			s.p.CloseAfterQueue(0)
		}
	}()
}

func startFront(t *testing.T) *lifecycletest.Target {
	t.Helper()
	b := func(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		return wsserver.NewGnet(settings.WebSocket(cfg), m, log, wsserver.Options{Front: frontEcho{}, NoKeepalive: true})
	}
	return start(t, "gnet", b, nil)
}

// TestGnetFrontAnswers: a request Front answers gets that answer, as
// net/http writes it, and the connection ends after it.
func TestGnetFrontAnswers(t *testing.T) {
	t.Parallel()
	tg := startFront(t)
	resp, err := http.Get("http://" + tg.Addr + "/other")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || string(body) != "teapot\n" || !resp.Close {
		t.Errorf("got %s %q (close %v), want 418 \"teapot\\n\" and Connection: close", resp.Status, body, resp.Close)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want http.Error's", ct)
	}
}

// TestGnetFrontUpgrades: Front's upgrade opens a connection whose frames,
// written from another goroutine or a task of its loop, arrive in order, and whose close after
// the queue comes after them, without a status code (1005 at the client).
func TestGnetFrontUpgrades(t *testing.T) {
	t.Parallel()
	tg := startFront(t)
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+tg.Addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, msg := range []string{"a", "loop", "b", "bye"} {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		want := msg
		if msg == "bye" {
			want = "last"
		}
		if _, got, err := conn.ReadMessage(); err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	_, _, err = conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNoStatusReceived {
		t.Errorf("after the queue: %v, want a close without a status code (1005)", err)
	}
}

// stallFront upgrades every request; a connection's "stall" holds its loop until
// release is closed, as a loop starved of CPU or busy with other
// connections would be, and says so on stalled.
type stallFront struct{ stalled, release chan struct{} }

func (f stallFront) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.(wsserver.LoopUpgrader).UpgradeOnLoop(func(p wsserver.LoopPeer) wsserver.Session { return &stallSession{p: p, f: f} })
}

type stallSession struct {
	wsserver.NopSession
	p wsserver.LoopPeer
	f stallFront
}

func (s *stallSession) Message(wsserver.Op, []byte) {
	s.p.Loop().Execute(func() {
		close(s.f.stalled)
		<-s.f.release
	})
}

// TestGnetLateLoopServesTimelyRequest: an upgrade request that reached
// the target before -handshake-timeout is served even when its loop gets
// to it only after the deadline (held up by other connections, or by a
// machine short of CPU), as net/http serves it: its deadline starts when
// its goroutine first reads, and the bytes are there. Closing it unread
// resets a client that did nothing wrong. A request still incomplete in
// that late read is closed then, and counted as timed out: the grace is
// one read, so a client that trickles bytes gains nothing. A refused
// connection's linger gets no such read: it ends on its clock.
func TestGnetLateLoopServesTimelyRequest(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	f := stallFront{stalled: make(chan struct{}), release: make(chan struct{})}
	b := func(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		return wsserver.NewGnet(settings.WebSocket(cfg), m, log, wsserver.Options{Front: f, NoKeepalive: true})
	}
	tg := start(t, "gnet", b, func(c *config.Config) {
		c.HandshakeTimeout = timeout
		c.Gnet.Loops = 1
	})
	// The one loop opens rc, half and refused before holder: the accept
	// queue and the loop's tasks keep that order, so their clocks run
	// once holder is upgraded.
	rc := dialTCP(t, tg.Addr)
	half := dialTCP(t, tg.Addr)
	// refused lingers after its answer, dropping what it sends on; the
	// linger's clock (2 s) must end it even with bytes unread.
	refused := dialTCP(t, tg.Addr)
	refused.write([]byte("NOT A REQUEST\r\n\r\n"))
	if resp := refused.response(); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a malformed request: %s", resp.Status)
	}
	holder, _, err := websocket.DefaultDialer.Dial("ws://"+tg.Addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := holder.WriteMessage(websocket.TextMessage, []byte("stall")); err != nil {
		t.Fatal(err)
	}
	<-f.stalled
	rc.write([]byte(wstest.UpgradeRequest()))
	half.write([]byte("GET / HTTP/1.1\r\nHost: example.test\r\nUpgrade: webs"))
	refused.write([]byte("more"))
	// The loop is held: nothing can read the requests. Release it once
	// the deadlines (and the linger's) are past, and both the expired
	// clocks and the requests wait on it.
	time.Sleep(3 * time.Second)
	close(f.release)
	if resp := rc.response(); resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("a whole request sent within -handshake-timeout %v, read after it: %s", timeout, resp.Status)
	}
	half.expectEOF()
	// The refusal's FIN came with its answer; the end of its linger shows
	// as a reset to what the client writes on.
	waitFor(t, "the refused connection's linger to end", func() bool {
		_, err := refused.c.Write([]byte("x"))
		return err != nil
	})
	if n := tg.Stats().Timeouts[metrics.ListenerTarget][metrics.StageHeader]; n != 1 {
		t.Errorf("%d header timeouts, want 1 (the incomplete request)", n)
	}
}

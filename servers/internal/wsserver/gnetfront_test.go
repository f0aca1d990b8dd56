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

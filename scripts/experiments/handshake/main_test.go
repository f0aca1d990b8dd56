package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.Cleanup(func(code int) {
		harness.RemoveBuilds()
		os.Exit(code)
	}))
}

func TestLostBy(t *testing.T) {
	server := func(ok, rejected, abandoned uint64, transports ...string) *protocol.Stats {
		s := &protocol.Stats{Handshakes: map[string]uint64{"ok": ok, "rejected": rejected, "abandoned": abandoned}, HandshakesByTransport: map[string]map[string]uint64{}}
		for _, tr := range transports {
			s.HandshakesByTransport[tr] = map[string]uint64{"ok": ok}
		}
		return s
	}
	goRes := &result{Attempts: 100, Connected: 87}
	goRes.FirstTransport = map[string]struct {
		Attempts  int `json:"attempts"`
		Connected int `json:"connected"`
	}{"polling": {75, 75}, "websocket": {12, 12}, "webtransport": {13, 0}}
	pyRes := &result{Attempts: 100, Connected: 17}
	pyRes.FirstTransport = map[string]struct {
		Attempts  int `json:"attempts"`
		Connected int `json:"connected"`
	}{"polling": {70, 0}, "websocket": {17, 17}, "webtransport": {13, 0}}
	empty, blocking, pyEmpty := serverNamed("empty"), serverNamed("blocking-asyncio"), serverNamed("python-empty")
	for _, c := range []struct {
		name string
		r    row
		want string
	}{
		{"none", row{server: empty, res: &result{Attempts: 50, Connected: 50}, stats: server(50, 0, 0)}, "none"},
		{"go client", row{server: empty, res: goRes, stats: server(87, 0, 0, "polling", "websocket")},
			"client: 13 never reached the server, which refused none and completed all 87 it saw (the client's first transport was webtransport for 13, which the server does not serve)"},
		{"client did not count", row{server: empty, res: &result{Attempts: 50, Connected: 30}, stats: server(50, 0, 0)}, "client: the server completed 20 it did not count"},
		{"server refused", row{server: empty, res: &result{Attempts: 50, Connected: 30}, stats: server(30, 20, 0)}, "server: refused 20, gave up on 0"},
		{"frozen loop", row{server: blocking, res: &result{Attempts: 500, Connected: 300}, stats: server(300, 0, 200)}, "the server's frozen loop, as its model predicts: the client's deadline left 200"},
		{"go client against python-socketio", row{server: pyEmpty, res: pyRes},
			"client, by first transport: polling first: 0 of 70 connected: the client sends each polling POST chunked, without Content-Length, and python-engineio 4 reads it as empty: the CONNECT in it is never answered; webtransport first: 0 of 13 connected: no server here serves WebTransport"},
		{"no server view", row{server: pyEmpty, res: &result{Attempts: 5}}, "- (no server view)"},
	} {
		if got := lostBy(c.r); got != c.want {
			t.Errorf("%s: lostBy = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestGoClientRow is the experiment's Go client row in small: 200
// connections with the client's default transports against empty. Each
// connection tries first the first of the client's three transports in
// map order, WebTransport about one time in eight (so in 200, all but
// never: (7/8)^200 is 2.5e-12); the server serves polling and WebSocket
// over HTTP/1.1, so it never sees those, completes every one it sees, and
// the row puts the loss on the client.
func TestGoClientRow(t *testing.T) {
	t.Chdir("../../..")
	o := options{deadline: 5 * time.Second, delay: 50 * time.Millisecond, engine: config.EngineZishang520}
	r := measure(context.Background(), tlog{t}, o, &benchrun.Binaries{}, serverNamed("empty"), clientGo, 200)
	if r.err != nil || r.res == nil || r.stats == nil {
		t.Fatalf("row: %+v", r)
	}
	total, wt := 0, r.res.FirstTransport["webtransport"]
	for name, tr := range r.res.FirstTransport {
		if name != "polling" && name != "websocket" && name != "webtransport" {
			t.Errorf("first transport %q", name)
		}
		total += tr.Attempts
	}
	h := r.stats.Handshakes
	seen := h[protocol.ResultOK] + h[protocol.ResultRejected] + h[protocol.ResultFailed] + h[protocol.ResultAbandoned]
	switch {
	case total != 200 || r.res.Attempts != 200:
		t.Errorf("first transports %v add up to %d of %d", r.res.FirstTransport, total, r.res.Attempts)
	case wt.Attempts == 0 || wt.Connected != 0:
		t.Errorf("WebTransport first for %d, connected %d: want some, none connected (%v)", wt.Attempts, wt.Connected, r.res.FirstTransport)
	case seen != uint64(200-wt.Attempts) || r.stats.HandshakesByTransport["webtransport"] != nil:
		t.Errorf("the server saw %d handshakes (%v); want the %d that did not try WebTransport first", seen, r.stats.HandshakesByTransport, 200-wt.Attempts)
	case h[protocol.ResultOK] != uint64(r.res.Connected):
		t.Errorf("the server completed %d, the client counted %d", h[protocol.ResultOK], r.res.Connected)
	}
	if got := lostBy(r); !strings.Contains(got, "client: ") || !strings.Contains(got, "webtransport for") {
		t.Errorf("lost by %q", got)
	}
	var b strings.Builder
	writeTable(&b, o, cellsOf([]row{r}))
	if !strings.Contains(b.String(), "| empty | 200 | go | ") {
		t.Errorf("table:\n%s", b.String())
	}
	t.Logf("%s", b.String())
}

// tlog writes to the test's log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Logf("%s", strings.TrimSpace(string(p)))
	return len(p), nil
}

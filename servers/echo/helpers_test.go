package echo_test

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"knowngood/servers/targets"
	"knowngood/servers/variants"
	"knowngood/shared/config"
	"knowngood/shared/lifecycle"
	"knowngood/shared/lifecycle/lifecycletest"
	"knowngood/shared/metrics"
	"knowngood/shared/protocol"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gnet's package-level worker pool (Engine.Register runs on it)
		// keeps idle workers for 10 s and its janitors for good.
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*goWorker).run.func1"),
		goleak.IgnoreCurrent(),
	)
}

type build func(config.Config, *metrics.Metrics, *slog.Logger) (lifecycle.Target, error)

// wsTarget is a WebSocket echo of the catalog with its constructor.
type wsTarget struct {
	name  string
	build build
}

// wsTargets are the WebSocket echoes of the catalog, which every behaviour
// test runs against.
var wsTargets = wsTargetsWhere()

// wsTargetsWhere returns the WebSocket echoes of the catalog for which
// every predicate holds.
func wsTargetsWhere(preds ...func(variants.Variant) bool) []wsTarget {
	var out []wsTarget
	for _, v := range variants.Where(append(preds, variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket))...) {
		b, ok := targets.For(v.Name)
		if !ok {
			panic("no constructor for " + v.Name)
		}
		out = append(out, wsTarget{v.Name, b})
	}
	return out
}

// forEach runs f as a subtest for every WebSocket target.
func forEach(t *testing.T, f func(t *testing.T, name string, b build)) {
	for _, tg := range wsTargets {
		t.Run(tg.name, func(t *testing.T) { f(t, tg.name, tg.build) })
	}
}

// target is an echo target serving on 127.0.0.1 in the test process.
type target struct{ *lifecycletest.Target }

// start runs a target and shuts it down when the test ends.
func start(t *testing.T, name string, b build, tweak func(*config.Config)) *target {
	t.Helper()
	return startOn(t, name, b, tweak, nil, nil)
}

// startOn is start with the target's log going to logTo, and its listener
// wrapped by wrap (TLS) if not nil.
func startOn(t *testing.T, name string, b build, tweak func(*config.Config), logTo io.Writer, wrap func(net.Listener) net.Listener) *target {
	t.Helper()
	return &target{lifecycletest.Start(t, name, lifecycletest.Build(b), lifecycletest.Options{Tweak: tweak, Log: logTo, Wrap: wrap})}
}

func (tg *target) shutdown(timeout time.Duration) error { return tg.Shutdown(timeout) }
func (tg *target) url() string                          { return tg.URL() }
func (tg *target) stats() protocol.Stats                { return tg.Stats() }
func (tg *target) settled(t *testing.T) protocol.Stats  { return tg.Settled(t) }

// rawConn is a WebSocket client written frame by frame, for what real
// clients never send.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialTCP(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// upgradeRequest is a valid upgrade request with extra header lines.
func upgradeRequest(extra ...string) string {
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	return "GET /chat?room=1 HTTP/1.1\r\nHost: example.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\nSec-WebSocket-Version: 13\r\n" +
		strings.Join(extra, "") + "\r\n"
}

// rawDial connects and upgrades.
func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	rc := dialTCP(t, addr)
	rc.write([]byte(upgradeRequest()))
	if resp := rc.response(); resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	return rc
}

func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

// response reads an HTTP response and its body.
func (rc *rawConn) response() *http.Response {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatalf("reading the response: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	return resp
}

// diff returns the stats change since before.
func diff(before, after protocol.Stats) protocol.Stats { return protocol.Diff(before, after) }

func check(t *testing.T, what string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %d, want %d", what, got, want)
	}
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

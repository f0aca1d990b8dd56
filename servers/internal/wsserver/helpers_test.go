package wsserver_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/wstest"
)

type build = lifecycletest.Build

// on builds an echo on one library's constructor.
func on(newTarget func(wsserver.Settings, *metrics.Metrics, *slog.Logger, wsserver.Options) (lifecycle.Target, error)) build {
	return func(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		return newTarget(settings.WebSocket(cfg), m, log, wsserver.Options{Handler: wsserver.Echo{}})
	}
}

// gnetEcho is the echo on gnet, for the tests of its event loops.
var gnetEcho = on(wsserver.NewGnet)

// library is one of the layer's adapters. netHTTP: the library sits on
// net/http and writes through the listener's connections (gnet writes from
// its own loop).
type library struct {
	name    string
	build   build
	netHTTP bool
}

// libraries are the layer's adapters, one per row of the registry of
// WebSocket libraries, which every behaviour test runs against.
var libraries = func() []library {
	var out []library
	for _, w := range variants.WebSocketLibraries() {
		out = append(out, library{string(w.Library), on(wsserver.For(w.Library)), w.NetHTTP})
	}
	return out
}()

// forEach runs f as a subtest for every library, side by side: each has
// a target of its own on a port of its own.
func forEach(t *testing.T, f func(t *testing.T, name string, b build)) {
	for _, lib := range libraries {
		t.Run(lib.name, func(t *testing.T) {
			t.Parallel()
			f(t, lib.name, lib.build)
		})
	}
}

// start runs a target and shuts it down when the test ends.
func start(t *testing.T, name string, b build, tweak func(*config.Config)) *lifecycletest.Target {
	t.Helper()
	return lifecycletest.Start(t, name, b, lifecycletest.Options{Tweak: tweak})
}

func waitFor(t *testing.T, what string, cond func() bool) { lifecycletest.WaitFor(t, what, cond) }

// rawConn is a WebSocket client written frame by frame, for what real
// clients never send.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialTCP(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, br := wstest.Dial(t, addr)
	return &rawConn{t: t, c: c, br: br}
}

// rawDial connects and upgrades.
func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, br := wstest.Upgraded(t, addr)
	return &rawConn{t: t, c: c, br: br}
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
	return wstest.ReadResponse(rc.t, rc.br)
}

// upgrade sends the upgrade request and wants 101.
func (rc *rawConn) upgrade() {
	rc.t.Helper()
	rc.write([]byte(wstest.UpgradeRequest()))
	if resp := rc.response(); resp.StatusCode != http.StatusSwitchingProtocols {
		rc.t.Fatalf("upgrade: %s", resp.Status)
	}
}

// send writes one masked frame.
func (rc *rawConn) send(op ws.OpCode, fin bool, payload []byte) {
	rc.t.Helper()
	rc.sendFrame(ws.MaskFrame(ws.NewFrame(op, fin, payload)))
}

func (rc *rawConn) sendFrame(f ws.Frame) {
	rc.t.Helper()
	if err := ws.WriteFrame(rc.c, f); err != nil {
		rc.t.Fatal(err)
	}
}

// read reads one frame.
func (rc *rawConn) read() (ws.Header, []byte) {
	rc.t.Helper()
	h, err := ws.ReadHeader(rc.br)
	if err != nil {
		rc.t.Fatalf("reading a frame: %v", err)
	}
	p := make([]byte, h.Length)
	if _, err := io.ReadFull(rc.br, p); err != nil {
		rc.t.Fatalf("reading a payload: %v", err)
	}
	return h, p
}

// expectClose reads frames until a close frame, checks its code, answers
// it and checks that the server then closes the TCP connection.
func (rc *rawConn) expectClose(code int) {
	rc.t.Helper()
	for {
		h, p := rc.read()
		if h.OpCode != ws.OpClose {
			continue
		}
		if got := closeCode(p); got != code {
			rc.t.Fatalf("close code %d, want %d", got, code)
		}
		// The server may have closed already (it answers a bad close
		// frame with its own and goes): a failed write is fine.
		_ = ws.WriteFrame(rc.c, ws.MaskFrame(ws.NewCloseFrame(p[:min(len(p), 2)])))
		rc.expectEOF()
		return
	}
}

// expectEOF checks that the server closes the connection.
func (rc *rawConn) expectEOF() {
	rc.t.Helper()
	_, err := io.Copy(io.Discard, rc.br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		rc.t.Fatalf("the server did not close the connection: %v", err)
	}
	rc.c.Close()
}

func closeCode(p []byte) int {
	if len(p) < 2 {
		return 1005
	}
	return int(binary.BigEndian.Uint16(p))
}

func closePayload(code int, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

func check(t *testing.T, what string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %d, want %d", what, got, want)
	}
}

package servers

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/protocol"
)

// nativeGnet is the native engine on gnet's event loops, in the tables
// of the Socket.IO tests.
const nativeGnet = "native-gnet"

// engineFlags are the flags that run engine.
func engineFlags(engine string) []string { return []string{"-engine", engine} }

// forWebSocketEngines runs a test once on each engine and once on the
// native engine's gnet transport, which serves WebSocket sessions only:
// such a test picks its transports with transportsOn. In parallel, as
// forEngines.
func forWebSocketEngines(t *testing.T, test func(t *testing.T, engine string)) {
	t.Parallel()
	for _, engine := range append(slices.Clone(sioEngines), nativeGnet) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			test(t, engine)
		})
	}
}

// transportsOn are the client transport lists of sets that engine
// serves.
func transportsOn(engine string, sets ...string) []string {
	if engine == nativeGnet {
		return []string{"websocket"}
	}
	return sets
}

// TestGnetRefusesPolling: on the gnet transport a polling client gets
// Engine.IO's answer for a transport the server does not offer, 400
// {"code":0,"message":"Transport unknown"}, sees its connect fail, and the
// server counts each attempt as a failed handshake.
func TestGnetRefusesPolling(t *testing.T) {
	t.Parallel()
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	s := startServer(t, append(engineFlags(nativeGnet), "-variant", "empty")...)
	before := s.stats(t)
	const n = 5
	r := harness.SioConnect(t, "js", "--url", s.url, "--n", fmt.Sprint(n), "--transports", "polling", "--deadline-ms", "5000")
	if r.Connected != 0 || r.Failed != n {
		t.Errorf("%d connected, %d failed; want 0 and %d (errors %v)", r.Connected, r.Failed, n, r.Errors)
	}
	if got := r.HTTPErrors[`400 {"code":0,"message":"Transport unknown"}`]; got != n {
		t.Errorf("HTTP answers %v, want %d of 400 Transport unknown", r.HTTPErrors, n)
	}
	waitForStats(t, s, func(d protocol.Stats) bool { return d.Handshakes[protocol.ResultFailed] == n }, before)
}

// gnetSocketIOStages are the target port's time bounds on the native
// engine's gnet transport. As on echo-gnet, a request that is not an
// upgrade is answered once its header is in, without reading a body, and
// what follows is dropped for closeWait (2 s); no answer is kept alive,
// and there are no polling sessions.
func gnetSocketIOStages() ([]stage, map[string]uint64) {
	return []stage{
		{"mid-header", stageBound, sends(midHeader)},
		{"after the header", 2 * time.Second, sends(afterHeader)},
		{"mid-body", 2 * time.Second, sends(midBody)},
		{"quiet WebSocket", quietBound, quietWebSocket("/socket.io/?EIO=4&transport=websocket")},
	}, map[string]uint64{"header": 1}
}

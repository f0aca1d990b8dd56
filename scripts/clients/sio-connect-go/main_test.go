package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// The client library starts a timer goroutine of its own at init.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

// TestDefaultTransports: the client sets no transports by default, and the
// set its engine falls back to (clients/engine/v3 socket.go, Construct)
// hands its transports out in map order, the first of which it opens:
// WebTransport comes first about one time in eight. The margin: each of
// the three must come first in at least 5% of 10,000 sets (12.5% expected
// for websocket and webtransport; the shares are logged).
func TestDefaultTransports(t *testing.T) {
	if engine.DefaultSocketOptions().Transports() != nil {
		t.Fatal("the engine's default options set transports: the fallback set is not used")
	}
	first := map[string]int{}
	const draws = 10000
	for range draws {
		set := types.NewSet[engine.TransportCtor](&engine.PollingBuilder{}, &engine.WebSocketBuilder{}, &engine.WebTransportBuilder{})
		first[set.Keys()[0].Name()]++
	}
	t.Logf("first transport in %d default sets: %v", draws, first)
	for _, name := range []string{"polling", "websocket", "webtransport"} {
		if first[name] < draws/20 {
			t.Errorf("%s first in %d of %d sets, want at least %d", name, first[name], draws, draws/20)
		}
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--url", "http://127.0.0.1:8080", "--n", "5", "--deadline-ms", "100"}, new(strings.Builder))
	if err != nil || o.n != 5 || o.transports != nil || o.deadline.Milliseconds() != 100 {
		t.Errorf("parseFlags: %+v, %v", o, err)
	}
	for _, args := range [][]string{{"--url", "ws://x:1"}, {"--url", "http://x:1", "--n", "0"}, {"--url", "http://x:1", "--transports", "webtransport"}, {"--url", "http://x:1", "extra"}} {
		if _, err := parseFlags(args, new(strings.Builder)); err == nil {
			t.Errorf("parseFlags(%q): no error", args)
		}
	}
}

package socketio_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestStatsDiff checks that two /stats snapshots differ by exactly what a
// run did: sessions, handshakes, events and payload bytes both ways.
func TestStatsDiff(t *testing.T) { forWebSocket(t, testStatsDiff) }

func testStatsDiff(t *testing.T, engine string) {
	cfg := config.Default()
	tg := start(t, engine, socketio.Empty, nil)
	adminSrv := httptest.NewServer(admin.Handler(settings.Admin(cfg, protocol.About{}, nil), nil, tg.metrics, nil))
	defer adminSrv.Close()

	before := getStats(t, adminSrv.URL)
	const conns, echoes = 4, 3
	var sentBytes, receivedBytes int
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stats: %+v", tg.metrics.Snapshot().Disconnects)
		}
	})
	for range conns {
		conn, _ := rawOpen(t, tg)
		sentBytes += writePacket(t, conn, "40")
		receivedBytes += len(readText(t, conn)) - 1
		for i := range echoes {
			sentBytes += writePacket(t, conn, fmt.Sprintf(`42%d["echo","payload-%d"]`, i, i))
			receivedBytes += len(readText(t, conn)) - 1
		}
		conn.Close()
	}
	waitFor(t, "every session closed", func() bool { return tg.metrics.Snapshot().ConnectionsActive == 0 })
	d := protocol.Diff(before, getStats(t, adminSrv.URL))

	checks := []struct {
		name      string
		got, want uint64
	}{
		{"connections_total", d.ConnectionsTotal, conns},
		{"handshakes ok", d.Handshakes[protocol.ResultOK], conns},
		{"handshakes websocket ok", d.HandshakesByTransport["websocket"][protocol.ResultOK], conns},
		{"handshake latency count", d.HandshakeLatency.Count, conns},
		{"messages_received", d.MessagesReceived, conns * echoes},
		{"messages_sent", d.MessagesSent, conns * echoes},
		{"bytes_received", d.BytesReceived, uint64(sentBytes)},
		{"bytes_sent", d.BytesSent, uint64(receivedBytes)},
		{"disconnects transport close", d.Disconnects["transport close"], conns},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: diff %d, want %d", c.name, c.got, c.want)
		}
	}
	if len(d.Handshakes) != 1 {
		t.Errorf("handshake results that changed: %v, want only ok", d.Handshakes)
	}
}

// writePacket sends an Engine.IO message packet and returns its payload
// size as the server counts it (without the Engine.IO type byte).
func writePacket(t *testing.T, conn *websocket.Conn, packet string) int {
	t.Helper()
	send(t, conn, packet)
	return len(packet) - 1
}

func getStats(t *testing.T, adminURL string) protocol.Stats {
	t.Helper()
	s, err := harness.ReadStats(nil, adminURL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestShutdown checks that every connected client is told (a Socket.IO
// disconnect from the server), in a namespace the target names and in
// one a client made, and that Shutdown returns well within its timeout;
// TestMain's goleak check then finds no goroutine left.
func TestShutdown(t *testing.T) { forWebSocket(t, testShutdown) }

func testShutdown(t *testing.T, engine string) {
	tg := start(t, engine, waiting(engine), nil)
	var clients []*client
	for _, transports := range transportsOn(engine) {
		clients = append(clients, dial(t, tg.url, "/", transports, nil))
		clients = append(clients, dial(t, tg.url, "/made-by-the-client", transports, nil))
	}
	reasons := make(chan string, len(clients))
	for _, c := range clients {
		c.On("disconnect", func(args ...any) { reasons <- fmt.Sprint(args[0]) })
	}
	raw := socketIOConnNoAuth(t, tg)

	// Shutdown gives the sessions half the time left to go; one that
	// held on would keep it until then. With a timeout of 20 s, a quarter
	// of it is the bound: a margin of 5 s for what takes a fraction of a
	// second, or on gnet's loops 2 s, the close wait of the raw client,
	// which reads nothing (so answers no close frame) until Shutdown has
	// returned.
	const timeout = 20 * time.Second
	began := time.Now()
	tg.shutdownWithin(t, timeout)
	if took := time.Since(began); took > timeout/4 {
		t.Errorf("shutdown took %v with %d clients, want well within its %v timeout", took, len(clients)+1, timeout)
	}
	for range clients {
		select {
		case r := <-reasons:
			if r != "io server disconnect" {
				t.Errorf("client disconnect reason %q, want \"io server disconnect\"", r)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a client was not told of the shutdown")
		}
	}
	if got := readText(t, raw); got != "41" {
		t.Errorf("raw client got %q, want a DISCONNECT packet (41)", got)
	}
	waitClosed(t, raw)
	if _, err := http.Get(tg.url + "/socket.io/?EIO=4&transport=polling"); err == nil {
		t.Error("the listener still accepts after shutdown")
	}
}

func socketIOConnNoAuth(t *testing.T, tg *target) *websocket.Conn {
	t.Helper()
	conn, _ := rawOpen(t, tg)
	send(t, conn, "40")
	readText(t, conn)
	return conn
}

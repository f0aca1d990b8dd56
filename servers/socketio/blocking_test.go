package socketio_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

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

// TestBlockingRepeatedConnects: a session that writes 400 CONNECTs at once
// holds one place in the loop, not 400 (20 s at 50 ms each): it is closed
// after a few repeats, and the next client connects in a few delays.
// Not parallel with the other tests, whose work would eat into the
// margin; the engines' runs, each a loop asleep most of the time, are.
func TestBlockingRepeatedConnects(t *testing.T) { forWebSocket(t, testBlockingRepeatedConnects) }

func testBlockingRepeatedConnects(t *testing.T, engine string) {
	const delay = 50 * time.Millisecond
	tg := start(t, engine, socketio.Blocking, func(c *config.Config) { c.SocketIO.Delay = delay })

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
	// a second ack, after the same turn.
	conn, _ := rawOpen(t, tg)
	send(t, conn, "40")
	send(t, conn, "40")
	for i := range 2 {
		if ack := readText(t, conn); !strings.HasPrefix(ack, "40{") {
			t.Errorf("ack %d of a repeated CONNECT: %q", i+1, ack)
		}
	}
}

// TestBlockingLeaversGiveUpTheirTurn: clients that send a CONNECT and leave
// before their turn do not hold the loop: a client connecting after they
// have gone waits for at most the turn under way and its own, not for
// theirs. Not parallel with the other tests, as
// TestBlockingRepeatedConnects.
func TestBlockingLeaversGiveUpTheirTurn(t *testing.T) {
	forEach(t, webSocketEngines, testBlockingLeaversGiveUpTheirTurn)
}

func testBlockingLeaversGiveUpTheirTurn(t *testing.T, engine string) {
	const delay, leavers = 200 * time.Millisecond, 10
	tg := start(t, engine, socketio.Blocking, func(c *config.Config) { c.SocketIO.Delay = delay })
	for range leavers {
		conn, _ := rawOpen(t, tg)
		send(t, conn, "40")
		conn.Close()
	}
	want := map[string]uint64{protocol.ResultAbandoned: leavers}
	waitFor(t, fmt.Sprintf("handshakes %v", want), func() bool { return equalCounts(tg.metrics.Snapshot().Handshakes, want) })
	// Two turns at most; the old queue would make it ten.
	if took := timedConnect(t, tg); took > 4*delay {
		t.Errorf("a connect after %d leavers took %v, want < %v (4 delays)", leavers, took, 4*delay)
	}
}

package socketio_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics/metricstest"
)

// TestAdminUIUnderLoad: a target under load with an Admin UI attached
// that stops reading holds a bounded amount for it: the notifications
// past the bounds are dropped and counted, the live heap grows by far
// less than the events it was told of, the target goes on answering its
// clients, and the Admin UI gets its figures again once it reads. One
// engine at a time, alone: the test reads the process's heap.
func TestAdminUIUnderLoad(t *testing.T) { inTurn(t, webSocketEngines, testAdminUIUnderLoad) }

func testAdminUIUnderLoad(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.SocketIO.AdminUI = true })
	admin, _ := rawOpen(t, tg)
	send(t, admin, "40/admin,")
	for !strings.HasPrefix(readText(t, admin), "40/admin,") {
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()

	// 8 x 2,000 events of 1 KiB each: 16 MiB the Admin UI is told of.
	const users, events = 8, 2000
	payload := strings.Repeat("x", 1024)
	var wg sync.WaitGroup
	for range users {
		conn := socketIOConnNoAuth(t, tg)
		wg.Go(func() {
			for i := range events {
				if err := conn.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `42["chat",{"i":%d,"p":%q}]`, i, payload)); err != nil {
					t.Errorf("user: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for tg.metrics.Snapshot().MessagesReceived < users*events {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events received within 30s", tg.metrics.Snapshot().MessagesReceived, users*events)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // a few flushes
	grown := int64(heap()) - int64(before)
	full, slow := dropped(t, tg, "queue_full"), dropped(t, tg, "slow_reader")
	t.Logf("%s: heap grew %d KiB; dropped: %d queue_full, %d slow_reader", engine, grown>>10, full, slow)
	if full+slow == 0 {
		t.Error("no notification was dropped for an Admin UI that does not read")
	}
	if grown > 8<<20 {
		t.Errorf("the live heap grew by %d MiB while an Admin UI that does not read was told of 16 MiB of events", grown>>20)
	}

	// The target still answers.
	user := socketIOConnNoAuth(t, tg)
	send(t, user, `421["message-with-ack","still here"]`)
	if got := readText(t, user); got != `431["still here"]` {
		t.Errorf("an ack under load: %q", got)
	}

	// The Admin UI reads again: what was held for it, then its figures.
	for end := time.Now().Add(20 * time.Second); ; {
		if time.Now().After(end) {
			t.Fatal("no server_stats within 20s of the Admin UI reading again")
		}
		if strings.HasPrefix(readText(t, admin), `42/admin,["server_stats",`) {
			break
		}
	}
}

// dropped is knowngood_admin_ui_dropped_total{reason}.
func dropped(t *testing.T, tg *target, reason string) int {
	t.Helper()
	return metricstest.Counter(t, tg.reg, "knowngood_admin_ui_dropped_total", "reason", reason)
}

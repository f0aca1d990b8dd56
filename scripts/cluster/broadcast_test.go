package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestLeastConnBroadcast: three broadcast replicas joined through one
// Redis behind nginx's least_conn. WebSocket subscribers that connect
// through the front spread over every replica (each replica's
// connections_active > 0, summing to the subscribers), every subscriber's
// echo comes back through nginx, and once they leave every replica's count
// is back to zero.
func TestLeastConnBroadcast(t *testing.T) {
	c := up(t, "broadcast-gnet", "least_conn", 3)
	const n = 30
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conns := make([]*websocket.Conn, 0, n)
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	url := fmt.Sprintf("ws://127.0.0.1:%d/", c.port)
	for i := range n {
		conn, resp, err := dialer.Dial(url, nil)
		if err != nil {
			t.Fatalf("subscriber %d: %v (%v)", i, err, resp)
		}
		conns = append(conns, conn)
	}
	for i, conn := range conns {
		payload := fmt.Sprintf("subscriber-%d", i)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := conn.WriteJSON(map[string]any{"type": "echo", "payload": payload}); err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		var got struct {
			Type    string `json:"type"`
			Payload string `json:"payload"`
		}
		if err := conn.ReadJSON(&got); err != nil || got.Type != "echo" || got.Payload != payload {
			t.Fatalf("subscriber %d's echo through nginx: %+v, %v", i, got, err)
		}
	}
	// Every subscriber has had its echo, so each is counted by the replica
	// that holds it: no wait is needed.
	stats := c.stats(t)
	var sum int64
	for i, s := range stats {
		t.Logf("replica %d: %d connections active", i+1, s.ConnectionsActive)
		if s.ConnectionsActive == 0 {
			t.Errorf("replica %d holds no subscriber: least_conn did not spread them", i+1)
		}
		sum += s.ConnectionsActive
	}
	if sum != n {
		t.Errorf("the replicas hold %d connections, want the %d subscribers", sum, n)
	}
	for _, conn := range conns {
		conn.Close()
	}
	conns = nil
	waitFor(t, "every replica to count its subscribers gone", func() bool {
		for _, s := range c.stats(t) {
			if s.ConnectionsActive != 0 {
				return false
			}
		}
		return true
	})
}

// waitFor polls cond every 20 ms for 15 s at most: what a replica counts
// after a client leaves lags the client's close.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 15s for %s", what)
		}
	}
}

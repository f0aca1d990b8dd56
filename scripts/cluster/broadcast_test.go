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
// echo comes back through nginx, a broadcast from any of them reaches
// every subscriber exactly once with a listenerCount of all of them, and
// once they leave every replica's count is back to zero.
func TestLeastConnBroadcast(t *testing.T) {
	t.Parallel()
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
	broadcastEverywhere(t, conns, []int{0, n / 2, n - 1})
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

// broadcastEverywhere has each of senders broadcast once, then checks that
// every subscriber got each broadcast exactly once and each sender's
// listenerCount is every subscriber. An echo after the broadcasts closes
// each subscriber's stream: a copy that came twice came before it, since
// the replicas hand a remote broadcast to their clients before they
// answer its count, and every count was in before the last result.
func broadcastEverywhere(t *testing.T, conns []*websocket.Conn, senders []int) {
	t.Helper()
	type message struct {
		Type          string `json:"type"`
		Payload       string `json:"payload"`
		ListenerCount int    `json:"listenerCount"`
	}
	pending := map[*websocket.Conn][]string{} // broadcasts a sender read before its result
	for _, i := range senders {
		if err := conns[i].WriteJSON(map[string]any{"type": "broadcast", "payload": fmt.Sprintf("from-%d", i)}); err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
	}
	// The results first, so that every replica has delivered every
	// broadcast before the echoes go out.
	for _, i := range senders {
		for {
			var m message
			_ = conns[i].SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := conns[i].ReadJSON(&m); err != nil {
				t.Fatalf("sender %d: %v", i, err)
			}
			if m.Type == "broadcastResult" {
				if m.ListenerCount != len(conns) {
					t.Errorf("sender %d: listenerCount %d, want every subscriber: %d", i, m.ListenerCount, len(conns))
				}
				break
			}
			if m.Type != "broadcast" {
				t.Fatalf("sender %d: unexpected %+v", i, m)
			}
			pending[conns[i]] = append(pending[conns[i]], m.Payload)
		}
	}
	for i, conn := range conns {
		seen := map[string]int{}
		for _, p := range pending[conn] {
			seen[p]++
		}
		if err := conn.WriteJSON(map[string]any{"type": "echo", "payload": "end"}); err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		for {
			var m message
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := conn.ReadJSON(&m); err != nil {
				t.Fatalf("subscriber %d: %v (saw %v)", i, err, seen)
			}
			if m.Type == "echo" {
				break
			}
			if m.Type == "broadcast" {
				seen[m.Payload]++
			}
		}
		for _, s := range senders {
			if n := seen[fmt.Sprintf("from-%d", s)]; n != 1 {
				t.Errorf("subscriber %d got sender %d's broadcast %d times, want once", i, s, n)
			}
		}
	}
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

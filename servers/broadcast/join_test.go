package broadcast_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestMemberOnceUpgraded: a client that has read its 101 is a member, so
// a broadcast or a push made after that reaches it. Each round connects a
// new client and, as soon as its Dial returns (gorilla returns once it has
// read the 101), has a client connected before it broadcast; the new client
// must get that broadcast. Meanwhile the target pushes every millisecond,
// and the new client must get the first push stamped after its Dial
// returned.
//
// Both checks rest on orders the server keeps, not on timing. The
// broadcast: the new client asks for an echo only after the sender has its
// broadcastResult, so the broadcast was queued for the new client, if at
// all, before the echo, and one writer sends a connection's messages in
// order: the echo coming back first means the broadcast was missed. The
// push: sentAt is read before the push's fan-out takes the list of members
// (same process, same clock), so a push stamped after the Dial returned
// went to a list taken after the 101 was read; the sender sees the pushes
// in seq order, and once it sees the next one that push's fan-out is over,
// so the new client's echo again comes after it.
//
// It runs alone, the variants one after the other: the sender must read a
// push every millisecond, and one that falls behind beside other tests has
// its queue fill, and its result dropped.
func TestMemberOnceUpgraded(t *testing.T) {
	const rounds = 1000
	for _, v := range broadcastTargets() {
		t.Run(v.name, func(t *testing.T) { memberOnceUpgraded(t, v.name, v.build, rounds) })
	}
}

func memberOnceUpgraded(t *testing.T, name string, b lifecycletest.Build, rounds int) {
	tg := start(t, name, b, func(c *config.Config) { c.Broadcast.PushInterval = time.Millisecond })
	sender, _, err := dialer(0).Dial(tg.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	missedBroadcasts, missedPushes := 0, 0
	for k := range rounds {
		c, _, err := dialer(0).Dial(tg.URL(), nil)
		if err != nil {
			t.Fatalf("round %d: %v", k, err)
		}
		upgraded := time.Now().UnixNano()
		payload := fmt.Sprint(k)
		if err := sender.WriteMessage(websocket.TextMessage, []byte(`{"type":"broadcast","payload":`+payload+`}`)); err != nil {
			t.Fatal(err)
		}
		// The sender reads until it has its result and has seen the
		// push after the first one stamped after the Dial returned.
		var firstAfter uint64
		resulted, pushesDone := false, false
		for roundEnd := time.Now().Add(30 * time.Second); !resulted || !pushesDone; {
			if time.Now().After(roundEnd) {
				t.Fatalf("round %d: after 30s, result %v, pushes done %v; %d messages dropped", k, resulted, pushesDone, tg.Stats().BroadcastDropped)
			}
			msg := readJSON(t, sender)
			switch msg.Type {
			case protocol.TypeBroadcastResult:
				resulted = resulted || string(msg.Payload) == payload
			case protocol.TypePush:
				switch {
				case firstAfter == 0 && msg.SentAt > upgraded:
					firstAfter = msg.Seq
				case firstAfter != 0 && msg.Seq > firstAfter:
					pushesDone = true
				}
			}
		}
		// Now the new client: everything before its echo.
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"echo","payload":"last"}`)); err != nil {
			t.Fatal(err)
		}
		gotBroadcast, gotPush := false, false
		for {
			msg := readJSON(t, c)
			if msg.Type == protocol.TypeEcho {
				break
			}
			gotBroadcast = gotBroadcast || msg.Type == protocol.TypeBroadcast && string(msg.Payload) == payload
			gotPush = gotPush || msg.Type == protocol.TypePush && msg.Seq == firstAfter
		}
		_ = c.Close()
		if !gotBroadcast {
			missedBroadcasts++
		}
		if !gotPush {
			missedPushes++
		}
	}
	if missedBroadcasts+missedPushes > 0 {
		t.Errorf("of %d clients just upgraded, %d missed the broadcast made after their Dial returned, %d the push stamped after it", rounds, missedBroadcasts, missedPushes)
	}
}

// readJSON reads one message of the protocol, within 10 s.
func readJSON(t *testing.T, c *websocket.Conn) protocol.BroadcastMessage {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var msg protocol.BroadcastMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return msg
}

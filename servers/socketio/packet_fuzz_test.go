package socketio_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
)

// FuzzPackets: any text a client sends once joined, as a Socket.IO packet
// (events with any arguments, acks, binary placeholders, namespaces,
// garbage), gets an answer, is ignored, or closes that session; the
// target never crashes and serves the next session as before.
func FuzzPackets(f *testing.F) { fuzzPackets(f, config.EngineZishang520) }

// FuzzPacketsNative is FuzzPackets on the native engine.
func FuzzPacketsNative(f *testing.F) { fuzzPackets(f, config.EngineNative) }

func fuzzPackets(f *testing.F, engine string) {
	for _, seed := range []string{
		`42["echo","x"]`, `421["echo",{"a":[1,2,3]}]`, `42["message",null]`, `42["broadcast"]`, `42["join",{"x":1}]`,
		`42["join"]`, `42[]`, `42[1,2]`, `42{"a":1}`, `43["x"]`, `451-["echo",{"_placeholder":true,"num":0}]`,
		`41`, `44{"message":"x"}`, `42/custom,["echo"]`, `40/nope,`, `4`, `9`, `42["echo"`, "42[\"echo\",\"\xff\"]", `2`, `6`, ``,
	} {
		f.Add(seed)
	}
	tg := start(f, engine, socketio.Empty, nil)
	url := "ws" + strings.TrimPrefix(tg.url, "http") + "/socket.io/?EIO=4&transport=websocket"
	join := func(t *testing.T) *websocket.Conn {
		c, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatalf("the target stopped serving: %v", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, open, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(open), "0{") {
			t.Fatalf("open: %q, %v", open, err)
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte("40"))
		if _, ack, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(ack), "40{") {
			t.Fatalf("CONNECT: %q, %v", ack, err)
		}
		return c
	}
	echo := func(c *websocket.Conn) error {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if err := c.WriteMessage(websocket.TextMessage, []byte(`4299["echo","ok"]`)); err != nil {
			return err
		}
		for {
			_, msg, err := c.ReadMessage()
			if err != nil || string(msg) == `4399["ok"]` {
				return err
			}
		}
	}
	f.Fuzz(func(t *testing.T, packet string) {
		c := join(t)
		defer c.Close()
		_ = c.WriteMessage(websocket.TextMessage, []byte(packet))
		_ = echo(c) // an answer, silence or a close: all fine
		fresh := join(t)
		defer fresh.Close()
		if err := echo(fresh); err != nil {
			t.Fatalf("after %q, a fresh session gets no echo: %v", packet, err)
		}
	})
}

package wsserver_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/config"
)

// shout answers every message with the same message in upper case.
type shout struct{}

func (shout) Open(p wsserver.Peer) wsserver.Session { return &shoutSession{p: p} }

type shoutSession struct {
	wsserver.NopSession // Closed: nothing to clean up
	p                   wsserver.Peer
}

func (s *shoutSession) Message(op wsserver.Op, data []byte) { s.p.Reply(op, bytes.ToUpper(data)) }

// A Handler is all a target writes: the same one serves on every library.
func Example() {
	for _, lib := range variants.WebSocketLibraries() {
		fmt.Println(string(lib.Library)+":", serveOnce(wsserver.For(lib.Library), "hello"))
	}
	// Output:
	// gorilla: HELLO
	// coder: HELLO
	// gnet: HELLO
	// nbio: HELLO
}

// serveOnce starts a target with the shout handler, sends it msg from a
// client, and returns the answer.
func serveOnce(build wsserver.Build, msg string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err.Error()
	}
	// m nil: no metrics, as with -metrics=false.
	target, err := build(settings.WebSocket(config.Default()), nil, slog.New(slog.DiscardHandler), wsserver.Options{Handler: shout{}})
	if err != nil {
		return err.Error()
	}
	served := make(chan error, 1)
	go func() { served <- target.Serve(ln) }()
	defer func() { _ = target.Shutdown(context.Background()); <-served }()

	c, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+"/", nil)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return err.Error()
	}
	_, answer, err := c.ReadMessage()
	if err != nil {
		return err.Error()
	}
	return string(answer)
}

package sioclient

import (
	"context"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/siotest"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// lateCtor builds transports whose Open returns only once the Engine.IO
// socket has processed the server's OPEN: the worst case of the race between
// a transport's reader goroutine and the constructor that opened it.
type lateCtor struct{ engine.TransportCtor }

func (c lateCtor) New(s engine.Socket, opts engine.SocketOptionsInterface) engine.Transport {
	return &lateTransport{Transport: c.TransportCtor.New(s, opts), socket: s}
}

type lateTransport struct {
	engine.Transport
	socket engine.Socket
}

func (t *lateTransport) Open() engine.Transport {
	t.Transport.Open()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if t.socket.ReadyState() == engine.SocketStateOpen {
			break
		}
	}
	return t
}

// TestLostOpen shows the client losing a connection when the server's OPEN
// is read before the Manager subscribes to the Engine.IO socket, and Connect
// keeping it.
func TestLostOpen(t *testing.T) {
	url := siotest.StartServer(t)

	// The client alone.
	opts := socket.DefaultOptions()
	opts.SetTransports(types.NewSet[engine.TransportCtor](lateCtor{socket.WebSocket}))
	opts.SetReconnection(false)
	opts.SetAutoConnect(false)
	opts.SetForceNew(true)
	opts.SetTimeout(time.Second)
	s := socket.NewManager(url, opts).Socket("/", opts)
	connected := make(chan struct{}, 1)
	s.Once("connect", func(...any) { connected <- struct{}{} })
	s.Connect()
	select {
	case <-connected:
		t.Log("the zishang520 client kept the connection: its race may be fixed, and the gate no longer needed")
	case <-time.After(500 * time.Millisecond):
	}
	s.Disconnect()

	// The same transports behind the gate.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Connect(ctx, Options{URL: url, Transport: WebSocket, wrapTransport: func(c engine.TransportCtor) engine.TransportCtor { return lateCtor{c} }})
	if err != nil {
		t.Fatalf("Connect with the OPEN read before the Manager subscribes: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

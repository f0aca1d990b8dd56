package sioclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"knowngood/loadgen/sioclient"

	server "github.com/zishang520/socket.io/servers/socket/v3"
)

// IgnoreClientGlobals lists the goroutines that the zishang520 client starts
// at package init and never stops (its network-status poller, every 3 s).
func IgnoreClientGlobals() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/zishang520/socket.io/v3/pkg/utils.SetInterval.func1"),
		goleak.IgnoreAnyFunction("github.com/zishang520/socket.io/clients/engine/v3.setupNetworkHandling.func1"),
	}
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, IgnoreClientGlobals()...)
}

// startServer runs a zishang520 Socket.IO server in the process, with the
// `echo` event and a namespace middleware that rejects /private. The short
// ping interval bounds how long the server keeps a session it was not told
// about.
func startServer(t *testing.T) string {
	t.Helper()
	opts := server.DefaultServerOptions()
	opts.SetPingInterval(300 * time.Millisecond)
	opts.SetPingTimeout(200 * time.Millisecond)
	io := server.NewServer(nil, opts)
	h := io.ServeHandler(nil)
	onConnect := func(args ...any) {
		s := args[0].(*server.Socket)
		s.On("echo", func(args ...any) {
			if ack, ok := args[len(args)-1].(server.Ack); ok {
				ack(args[:len(args)-1], nil)
			}
		})
	}
	io.Of("/", nil).On("connection", onConnect)
	io.Of("/private", nil).Use(func(_ *server.Socket, next func(*server.ExtendedError)) {
		next(server.NewExtendedError("not allowed", nil))
	})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		io.Close(nil)
		srv.Close()
	})
	return srv.URL
}

func TestConnectEchoClose(t *testing.T) {
	url := startServer(t)
	for _, transport := range sioclient.Transports {
		t.Run(transport, func(t *testing.T) {
			const n = 20
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					c, err := sioclient.Connect(ctx, sioclient.Options{URL: url, Transport: transport})
					if err != nil {
						errs[i] = err
						return
					}
					if c.ID() == "" {
						errs[i] = errors.New("connected without an id")
					} else {
						errs[i] = c.Echo(ctx, "hello")
					}
					if err := c.Close(); err != nil && errs[i] == nil {
						errs[i] = err
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("connection %d: %v", i, err)
				}
			}
		})
	}
}

func TestConnectError(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sioclient.Connect(ctx, sioclient.Options{URL: url, Namespace: "/private", Transport: sioclient.WebSocket})
	if err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("Connect to a namespace that refuses: got %v, want the server's message", err)
	}
}

func TestRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	for _, transport := range sioclient.Transports {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		_, err := sioclient.Connect(ctx, sioclient.Options{URL: url, Transport: transport})
		cancel()
		// The client's own handling reported a refused dial only at its
		// open timeout (20 s); it must come at once.
		if err == nil || errors.Is(err, sioclient.ErrDeadline) {
			t.Errorf("%s: Connect to a closed port: got %v, want the dial's error", transport, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: the refusal took %v", transport, d)
		}
	}
}

func TestDeadline(t *testing.T) {
	// A server that accepts the connection and never answers.
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	for _, transport := range sioclient.Transports {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		c, err := sioclient.Dial(sioclient.Options{URL: srv.URL, Transport: transport, CloseTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(ctx); !errors.Is(err, sioclient.ErrDeadline) {
			t.Errorf("%s: Wait: got %v, want ErrDeadline", transport, err)
		}
		cancel()
		if transport == sioclient.WebSocket {
			// The dial waits for an upgrade that never comes, and the
			// client's dialer has no timeout: Close gives up.
			c2, _ := sioclient.Dial(sioclient.Options{URL: srv.URL, Transport: transport, CloseTimeout: 100 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			_ = c2.Wait(ctx)
			cancel()
			if err := c2.Close(); !errors.Is(err, sioclient.ErrStillClosing) {
				t.Errorf("Close during a dial that hangs: got %v, want ErrStillClosing", err)
			}
		}
		// Unblock the handlers so that every dial returns and every
		// goroutine can end.
		go func() {
			for range 3 {
				srv.CloseClientConnections()
				time.Sleep(20 * time.Millisecond)
			}
		}()
		if err := c.Close(); err != nil {
			t.Errorf("%s: Close: %v", transport, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, o := range []sioclient.Options{
		{URL: "127.0.0.1:8080", Transport: sioclient.WebSocket},
		{URL: "ws://127.0.0.1:8080", Transport: sioclient.WebSocket},
		{URL: "http://127.0.0.1:8080", Transport: "webtransport"},
		{URL: "http://127.0.0.1:8080", Transport: ""},
		{URL: "http://127.0.0.1:8080", Transport: sioclient.WebSocket, Namespace: "custom"},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
}

// Package siotest runs a Socket.IO server in a test process for the load
// client's tests, and lists the goroutines that the zishang520 client leaves
// running by design.
package siotest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.uber.org/goleak"

	server "github.com/zishang520/socket.io/servers/socket/v3"
)

// IgnoreClientGlobals lists the goroutines that the zishang520 client starts
// at package init and never stops (its network-status poller, every 3 s),
// for goleak.
func IgnoreClientGlobals() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/zishang520/socket.io/v3/pkg/utils.SetInterval.func1"),
		goleak.IgnoreAnyFunction("github.com/zishang520/socket.io/clients/engine/v3.setupNetworkHandling.func1"),
	}
}

// StartServer runs a zishang520 Socket.IO server (the library, not a
// knowngood variant) until the test ends, and returns its http:// URL. It
// acks `echo` with its arguments; the namespace /private refuses every
// socket with the message "not allowed".
func StartServer(t testing.TB) string {
	t.Helper()
	io := server.NewServer(nil, nil)
	h := io.ServeHandler(nil) // creates the engine
	io.Of("/", nil).On("connection", func(args ...any) {
		s := args[0].(*server.Socket)
		s.On("echo", func(args ...any) {
			if ack, ok := args[len(args)-1].(server.Ack); ok {
				ack(args[:len(args)-1], nil)
			}
		})
	})
	io.Of("/private", nil).Use(func(_ *server.Socket, next func(*server.ExtendedError)) {
		next(server.NewExtendedError("not allowed", nil))
	})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		io.Close(nil)
		// The server can keep a long-poll that arrives while it closes
		// the session unanswered; end such requests.
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// StartSilent runs an HTTP server that takes every request and answers
// none (a target that hangs) until unblock is called or the test ends,
// and returns its http:// URL and unblock, which may be called more than
// once. Once unblocked, its handlers return, so that the client's dials
// and polls end and leave no goroutine behind.
func StartSilent(t testing.TB) (url string, unblock func()) {
	t.Helper()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	unblock = sync.OnceFunc(func() { close(block) })
	t.Cleanup(srv.Close)
	t.Cleanup(unblock) // first: Close waits for the handlers
	return srv.URL, unblock
}

// Package siotest runs a Socket.IO server in a test process for the load
// client's tests, and lists the goroutines that the zishang520 client leaves
// running by design.
package siotest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/servers/sioengine"
	"github.com/knowngood/knowngood/shared/leaktest"
)

// IgnoreClientGlobals lists the goroutines that the zishang520 client starts
// at package init and never stops (its network-status poller, every 3 s),
// and those running when it is called (from TestMain: the package-level
// ones of the libraries under StartServer's engine, gnet's worker pool),
// for goleak.
func IgnoreClientGlobals() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreCurrent(),
		leaktest.GnetWorkers,
		goleak.IgnoreAnyFunction("github.com/zishang520/socket.io/v3/pkg/utils.SetInterval.func1"),
		goleak.IgnoreAnyFunction("github.com/zishang520/socket.io/clients/engine/v3.setupNetworkHandling.func1"),
	}
}

// StartServer runs a Socket.IO server (this project's own engine,
// servers/sioengine, as the native targets run it) until the test ends, and
// returns its http:// URL. It acks `echo` with its arguments; the
// namespace /private refuses every socket with the message "not allowed".
// Not the zishang520 library's server: around an upgrade from polling it
// loses about one packet in a thousand sessions on a busy machine, and a
// load client's test would fail for it.
func StartServer(t testing.TB) string {
	t.Helper()
	io := sioengine.New(sioengine.Options{
		PingInterval: 25 * time.Second, PingTimeout: 20 * time.Second, ConnectTimeout: 45 * time.Second,
		MaxPayload: 1_000_000, Transports: []string{sioengine.Polling, sioengine.WebSocket},
		Namespaces: []string{"/private"},
		Hooks: sioengine.Hooks{
			Connecting: func(s *sioengine.Socket, next func(error)) {
				if s.Namespace().Name() == "/private" {
					next(errNotAllowed)
					return
				}
				next(nil)
			},
			Event: func(_ *sioengine.Socket, e *sioengine.Event) {
				if e.Name == "echo" && e.HasAck() {
					e.Ack(e.Args, e.Attachments)
				}
			},
		},
	})
	srv := httptest.NewServer(io)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		io.Close(ctx)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

var errNotAllowed = errors.New("not allowed")

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

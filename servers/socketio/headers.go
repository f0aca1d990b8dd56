package socketio

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// unfinished counts the requests that began and never reached a handler:
// headers cut short by -handshake-timeout (a client that sends its request
// a byte a second), or garbage net/http answered 400 itself. Each is a
// handshake that failed, as on the WebSocket targets; the transport label
// is "unknown", since the request never said.
type unfinished struct {
	m     *metrics.Metrics
	conns sync.Map // net.Conn -> *connSeen
}

type connSeen struct {
	active  atomic.Bool // net/http read a byte of a request
	handled atomic.Bool // a handler took a request
}

type connKey struct{}

// install hooks u into srv, and returns h wrapped so that it marks its
// connection handled.
func (u *unfinished) install(srv *http.Server, h http.Handler) http.Handler {
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			u.conns.Store(c, &connSeen{})
		case http.StateActive:
			if v, ok := u.conns.Load(c); ok {
				v.(*connSeen).active.Store(true)
			}
		case http.StateHijacked:
			u.conns.Delete(c)
		case http.StateClosed:
			v, ok := u.conns.LoadAndDelete(c)
			if seen, _ := v.(*connSeen); ok && seen.active.Load() && !seen.handled.Load() {
				u.m.Handshake(protocol.ResultFailed, "unknown", 0)
			}
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			if v, ok := u.conns.Load(c); ok {
				v.(*connSeen).handled.Store(true)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// engineHeaders are the request headers the default engine (zishang520)
// and its WebSocket upgrade read: CORS, the upgrade's own, a POST's
// body, compression, and what a load balancer adds.
var engineHeaders = []string{
	"Origin", "Connection", "Upgrade",
	"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions", "Sec-Websocket-Protocol",
	"Content-Type", "Content-Length", "Accept-Encoding",
	"Access-Control-Request-Method", "Access-Control-Request-Headers",
	"Cookie", "User-Agent", "X-Forwarded-For", "X-Forwarded-Proto",
}

// leanHeader drops from r every header the engine does not read. The
// default engine keeps its open request for the session's life (a
// socket's handshake headers, copied again for each namespace it joins),
// and its WebSocket handler runs as long as the session, holding the
// request net/http parsed: anything else a client sends, up to
// -max-header-bytes, would be held as long as the session. The header is
// changed in place, as no one reads it after the engine, and the values
// kept are copied: net/http parses every value of a header into one
// array, which a value kept would keep whole.
func leanHeader(r *http.Request) {
	for name, values := range r.Header {
		if slices.Contains(engineHeaders, name) {
			r.Header[name] = slices.Clone(values)
		} else {
			delete(r.Header, name)
		}
	}
}

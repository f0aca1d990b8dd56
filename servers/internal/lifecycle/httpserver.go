package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/knowngood/knowngood/shared/metrics"
)

// HTTPServer returns the http.Server of every HTTP listener: the targets
// built on net/http and the admin listener. Serve it with ServeHTTP.
//
// Every connection a client opens is bounded in time at each stage, with
// defaults no stricter than Node's http server (headersTimeout 60 s,
// requestTimeout 300 s, keepAliveTimeout 5 s):
//   - the request header: -handshake-timeout, from the accept (for a later
//     request on the same connection, from its first byte);
//   - the request body: -body-timeout, from the end of the header
//     (ServeHTTP);
//   - between requests: -idle-timeout.
//
// and in size: a request header over -max-header-bytes gets 431.
//
// None of them runs while a handler holds its response (an Engine.IO
// long-polling GET waits up to the ping interval), nor on a hijacked
// connection (WebSocket), which its target bounds with pings. Hence no
// ReadTimeout or WriteTimeout: net/http leaves their deadlines on a
// hijacked connection, and a read deadline that passes while a handler
// waits cancels the request.
func HTTPServer(l HTTPLimits, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.Header,
		MaxHeaderBytes:    int(l.HeaderBytes),
		IdleTimeout:       l.Idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// HTTPLimits bound what a client can make an HTTP listener hold.
type HTTPLimits struct {
	Header      time.Duration // -handshake-timeout: to send a request's header
	HeaderBytes int64         // -max-header-bytes: a request header's size
	Idle        time.Duration // -idle-timeout: between keep-alive requests
	Body        time.Duration // -body-timeout: to send a body once the header is in
}

// ServeHTTP serves srv on ln as srv.Serve does, once it has added what
// net/http lacks: a deadline on each request body (bodyTimeout), and the
// count of the connections closed by a time bound
// (knowngood_timeouts_total{listener,stage}). It keeps the server's own
// ConnContext, ConnState and Handler: ConnContext and Handler run inside
// its own, ConnState after it, so that a connection closed by a bound is
// counted by the time the server's hook sees it closed.
func ServeHTTP(srv *http.Server, ln net.Listener, bodyTimeout time.Duration, m *metrics.Metrics, listener string) error {
	b := &httpBounds{
		m: m, listener: listener,
		header: srv.ReadHeaderTimeout, idle: srv.IdleTimeout, body: bodyTimeout,
	}
	b.install(srv)
	return srv.Serve(ln)
}

// httpBounds follows each connection of one HTTP listener, to tell which
// time bound, if any, closed it.
type httpBounds struct {
	m                  *metrics.Metrics
	listener           string
	header, idle, body time.Duration
	conns              sync.Map // net.Conn -> *connBounds
}

// connBounds is where one connection stands.
type connBounds struct {
	mu      sync.Mutex
	state   http.ConnState
	since   time.Time // accepted, or last went idle: where the header or idle clock starts
	handled bool      // a handler took the current request
	bodyDue time.Time // the current request body's deadline, until it is read; zero otherwise
}

type connBoundsKey struct{}

func (b *httpBounds) install(srv *http.Server) {
	prevContext, prevState, next := srv.ConnContext, srv.ConnState, srv.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevContext != nil {
			ctx = prevContext(ctx, c)
		}
		cb := &connBounds{state: http.StateNew, since: time.Now()}
		b.conns.Store(c, cb)
		return context.WithValue(ctx, connBoundsKey{}, cb)
	}
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		b.connState(c, s)
		if prevState != nil {
			prevState(c, s)
		}
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.serve(next, w, r)
	})
}

func (b *httpBounds) connState(c net.Conn, s http.ConnState) {
	v, ok := b.conns.Load(c)
	if !ok {
		return
	}
	cb := v.(*connBounds)
	switch s {
	case http.StateActive:
		cb.mu.Lock()
		cb.state = s
		cb.mu.Unlock()
	case http.StateIdle:
		cb.mu.Lock()
		cb.state, cb.since, cb.handled, cb.bodyDue = s, time.Now(), false, time.Time{}
		cb.mu.Unlock()
	case http.StateHijacked:
		// The connection is the WebSocket library's now: a body deadline
		// (a GET upgrade that came with a body) must not end it.
		b.conns.Delete(c)
		_ = c.SetReadDeadline(time.Time{})
	case http.StateClosed:
		b.conns.Delete(c)
		if stage := cb.closedBy(time.Now(), b.header, b.idle); stage != "" {
			b.m.Timeout(b.listener, stage)
		}
	}
}

// closedBy names the time bound that closed the connection at now, or ""
// when none did (the client left, the answer said close, shutdown). A
// bound's deadline is set after the clock it is measured from starts here,
// so a connection that one closed has been in its stage for at least the
// bound; a client that leaves first has been there for less.
func (cb *connBounds) closedBy(now time.Time, header, idle time.Duration) string {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	in := now.Sub(cb.since)
	switch {
	case !cb.bodyDue.IsZero():
		if !now.Before(cb.bodyDue) {
			return metrics.StageBody
		}
	case cb.handled:
		// Answered: the close came with the answer or from the client.
	case cb.state == http.StateIdle:
		if in >= idle {
			return metrics.StageIdle
		}
	default:
		// The first request's header, or a later one's whose bytes came
		// while net/http read it (StateActive). A later request that
		// came in one piece, then stopped, leaves net/http's state idle,
		// and is counted as idle.
		if in >= header {
			return metrics.StageHeader
		}
	}
	return ""
}

// serve runs next with the request body under its deadline.
func (b *httpBounds) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	cb, _ := r.Context().Value(connBoundsKey{}).(*connBounds)
	if cb == nil {
		next.ServeHTTP(w, r)
		return
	}
	cb.mu.Lock()
	cb.handled = true
	cb.mu.Unlock()
	if r.Body == nil || r.Body == http.NoBody {
		next.ServeHTTP(w, r)
		return
	}
	rc := http.NewResponseController(w)
	due := time.Now().Add(b.body)
	if rc.SetReadDeadline(due) != nil {
		next.ServeHTTP(w, r)
		return
	}
	cb.mu.Lock()
	cb.bodyDue = due
	cb.mu.Unlock()
	// A shallow copy: net/http's own request must keep its own body, by
	// which it tells that a body closed before its end leaves bytes on the
	// wire, and closes the connection instead of reading them as the
	// next request.
	r = r.WithContext(r.Context())
	r.Body = &boundedBody{ReadCloser: r.Body, read: func() {
		// net/http's read that watches for the client leaving starts at
		// the end of the body: it must not inherit the deadline.
		_ = rc.SetReadDeadline(time.Time{})
		cb.mu.Lock()
		cb.bodyDue = time.Time{}
		cb.mu.Unlock()
	}}
	next.ServeHTTP(w, r)
	// A body the handler left unread is read and dropped by net/http,
	// still under the deadline.
}

// boundedBody calls read once, when the body has been read to its end.
type boundedBody struct {
	io.ReadCloser
	read func()
	once sync.Once
}

func (bb *boundedBody) Read(p []byte) (int, error) {
	n, err := bb.ReadCloser.Read(p)
	if err == io.EOF {
		bb.once.Do(bb.read)
	}
	return n, err
}

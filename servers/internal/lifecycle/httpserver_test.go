package lifecycle_test

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
)

// bound is every time bound in these tests; closedWithin, the most a
// connection may outlive it before the test calls it held: generous, for a
// machine busy with other work.
const (
	bound        = 300 * time.Millisecond
	closedWithin = 10 * time.Second
)

// boundedServer serves h through HTTPServer and ServeHTTP on 127.0.0.1
// with every bound set to bound.
type boundedServer struct {
	addr   string
	m      *metrics.Metrics
	closed chan struct{} // one value per connection closed, once it is counted
}

func newBoundedServer(t *testing.T, h http.Handler) *boundedServer {
	t.Helper()
	limits := lifecycle.HTTPLimits{Header: bound, HeaderBytes: config.DefaultMaxHeaderBytes, Idle: bound, Body: bound}
	s := &boundedServer{m: metrics.New(prometheus.NewRegistry(), "test"), closed: make(chan struct{}, 100)}
	srv := lifecycle.HTTPServer(limits, h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			s.closed <- struct{}{}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = lifecycle.ServeHTTP(srv, ln, limits.Body, s.m, metrics.ListenerTarget)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return s
}

// timeouts is the count of one stage once the server has seen n more
// connections close: ServeHTTP counts a close before it calls the
// server's own ConnState.
func (s *boundedServer) timeouts(t *testing.T, n int, stage string) uint64 {
	t.Helper()
	for range n {
		select {
		case <-s.closed:
		case <-time.After(closedWithin):
			t.Fatal("the server did not see a connection close")
		}
	}
	return s.m.Snapshot().Timeouts[metrics.ListenerTarget][stage]
}

// closedBy writes sends on a new connection, each after the answer to the
// one before it, reads what comes back until the server closes the
// connection, and returns what it read and how long the connection lasted;
// it fails the test if the server keeps it open for closedWithin.
func closedBy(t *testing.T, addr string, sends ...string) (string, time.Duration) {
	t.Helper()
	began := time.Now() // before the server can have accepted
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(closedWithin))
	r := bufio.NewReader(c)
	var got strings.Builder
	for i, send := range sends {
		if _, err := c.Write([]byte(send)); err != nil {
			t.Fatal(err)
		}
		if i < len(sends)-1 {
			// The answer to this one: a status line, a header, "ok".
			for !strings.HasSuffix(got.String(), "ok") {
				b, err := r.ReadByte()
				if err != nil {
					t.Fatalf("sent %q: %v after %q", send, err, got.String())
				}
				got.WriteByte(b)
			}
		}
	}
	rest, err := io.ReadAll(r)
	got.Write(rest)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("sent %q: still open after %v", sends, closedWithin)
	}
	return got.String(), time.Since(began)
}

// TestHTTPServerBounds: a connection that stops at any stage of a request
// is closed once that stage's bound has passed, and counted by stage; one
// whose client leaves first is not counted.
func TestHTTPServerBounds(t *testing.T) {
	t.Parallel() // a server of its own
	s := newBoundedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/careless" {
			// As Engine.IO's polling POST: whatever came, then answer.
			_ = r.Body.Close()
			err = nil
		}
		if err != nil {
			http.Error(w, "body cut short", http.StatusRequestTimeout)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	cases := []struct {
		name, send, stage string
		answered          bool
	}{
		{"nothing sent", "", metrics.StageHeader, false},
		{"mid-header", "GET / HTTP/1.1\r\nHost: x\r\n", metrics.StageHeader, false},
		{"after the header", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", metrics.StageBody, false},
		{"mid-body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", metrics.StageBody, false},
		{"mid-body, answered all the same", "POST /careless HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789", metrics.StageBody, true},
		{"idle keep-alive", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", metrics.StageIdle, true},
		{"idle after a body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", metrics.StageIdle, true},
		// net/http marks a connection active again only when bytes of
		// the next request come after it has begun to read it: a piece
		// that came at once, then nothing, leaves it idle, and so it is
		// counted.
		{"mid-header of a second request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n|GET / HTTP/1.1\r\n", metrics.StageIdle, true},
	}
	for _, c := range cases {
		before := s.m.Snapshot().Timeouts[metrics.ListenerTarget][c.stage]
		got, lasted := closedBy(t, s.addr, strings.Split(c.send, "|")...)
		if answered := strings.HasPrefix(got, "HTTP/1.1 200"); answered != c.answered {
			t.Errorf("%s: answer %q", c.name, got)
		}
		if lasted < bound {
			t.Errorf("%s: closed after %v, before the bound of %v", c.name, lasted, bound)
		}
		if after := s.timeouts(t, 1, c.stage); after != before+1 {
			t.Errorf("%s: timeouts{stage=%q} went from %d to %d, want one more", c.name, c.stage, before, after)
		}
	}

	before := s.m.Snapshot().Timeouts
	for _, send := range []string{"", "GET / HTTP/1.1\r\nHost: x\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"} {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(send))
		if strings.HasSuffix(send, "\r\n\r\n") {
			_ = c.SetReadDeadline(time.Now().Add(closedWithin))
			_, _ = bufio.NewReader(c).ReadString('\n')
		}
		c.Close()
	}
	s.timeouts(t, 3, metrics.StageIdle)
	if after := s.m.Snapshot().Timeouts; !reflect.DeepEqual(before, after) {
		t.Errorf("clients that left counted as timeouts: %v, then %v", before, after)
	}
}

// TestHTTPServerHeaderLimit: every HTTP listener (the targets on
// net/http and the admin listener) answers a header over
// -max-header-bytes with 431, finished or not, without waiting for the
// -handshake-timeout; one under it is served.
func TestHTTPServerHeaderLimit(t *testing.T) {
	t.Parallel()
	s := newBoundedServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	limit := config.Default().MaxHeaderBytes
	for _, c := range []struct {
		name, send, want string
	}{
		{"under the limit", "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", int(limit)/2) + "\r\n\r\n", "HTTP/1.1 200"},
		{"over it", "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", int(limit)+8<<10) + "\r\n\r\n", "HTTP/1.1 431"},
		{"over it, unfinished", "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", int(limit)+8<<10), "HTTP/1.1 431"},
	} {
		conn, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte(c.send))
		_ = conn.SetReadDeadline(time.Now().Add(closedWithin))
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if !strings.HasPrefix(line, c.want) {
			t.Errorf("%s: answer %q (%v), want %s", c.name, line, err, c.want)
		}
		// net/http lingers after a 431 before it closes: wait for it.
		select {
		case <-s.closed:
		case <-time.After(closedWithin):
			t.Fatalf("%s: the server did not close the connection", c.name)
		}
	}
}

// TestHTTPServerHeldResponse: no bound cuts a response that a handler
// holds (a long-polling GET) or a hijacked connection, even one whose
// request came with a body.
func TestHTTPServerHeldResponse(t *testing.T) {
	t.Parallel() // a server of its own
	const held = 4 * bound
	s := newBoundedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/hijack" {
			c, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			// Echo one line, however long it takes to come.
			line, err := rw.ReadString('\n')
			if err == nil {
				_, _ = c.Write([]byte(line))
			}
			return
		}
		select {
		case <-time.After(held):
			_, _ = io.WriteString(w, "held")
		case <-r.Context().Done():
		}
	}))

	got, _ := closedBy(t, s.addr, "GET /poll HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if !strings.HasSuffix(got, "held") {
		t.Errorf("held response: got %q, want it answered after %v", got, held)
	}

	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("POST /hijack HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")); err != nil {
		t.Fatal(err)
	}
	// Quiet for longer than every bound, then a line: the echo comes back.
	time.Sleep(held)
	if _, err := c.Write([]byte("still here\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(closedWithin))
	if line, err := bufio.NewReader(c).ReadString('\n'); line != "still here\n" {
		t.Errorf("hijacked connection: read %q, %v; want the line back", line, err)
	}
	if n := s.m.Snapshot().Timeouts; len(n) != 0 {
		t.Errorf("timeouts %v, want none", n)
	}
}

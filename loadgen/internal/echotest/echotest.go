// Package echotest runs small echo servers in a test process for the load
// scenarios' tests: a WebSocket echo on gorilla/websocket (the library, not
// a knowngood variant) and a raw TCP echo, each with ways to misbehave on
// purpose.
package echotest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Options make a server misbehave; the zero value is a faithful echo.
type Options struct {
	// StallAfter > 0: the server pauses for Stall before echoing its
	// StallAfter-th message (counted over all connections), once.
	StallAfter int64
	Stall      time.Duration
	// Corrupt: every echo has its last byte changed.
	Corrupt bool
	// Text (WebSocket): every echo goes back as a text message; Binary:
	// as a binary one.
	Text, Binary bool
	// Silent: messages are read and never echoed.
	Silent bool
	// CloseAfter > 0: each connection is closed after that many messages
	// (WebSocket: with code 1011); CloseIdleAfter > 0: each connection is
	// closed that long after it opened, whatever it does.
	CloseAfter     int
	CloseIdleAfter time.Duration
	// HoldFor (TCP): for that long after a connection opens, its bytes are
	// read and counted in HeldBytes but not echoed; then they are echoed
	// and the echo goes on as usual.
	HoldFor time.Duration
}

// Server is a running echo server.
type Server struct {
	URL string // ws://127.0.0.1:PORT/ or tcp://127.0.0.1:PORT

	Messages  atomic.Int64 // received, over all connections (TCP: reads)
	Active    atomic.Int64 // connections open now
	HeldBytes atomic.Int64 // see Options.HoldFor

	opts    Options
	mu      sync.Mutex
	remotes map[string]int // connections by the client's IP
	conns   map[io.Closer]struct{}
	wg      sync.WaitGroup
}

// Remotes returns the number of connections seen from each client IP.
func (s *Server) Remotes() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.remotes {
		out[k] = v
	}
	return out
}

func newServer(opts Options) *Server {
	return &Server{opts: opts, remotes: map[string]int{}, conns: map[io.Closer]struct{}{}}
}

// track registers an open connection.
func (s *Server) track(c io.Closer, remote net.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c] = struct{}{}
	if host, _, err := net.SplitHostPort(remote.String()); err == nil {
		s.remotes[host]++
	}
	s.Active.Add(1)
}

func (s *Server) untrack(c io.Closer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	s.Active.Add(-1)
}

// closeAll closes every connection and waits for their goroutines.
func (s *Server) closeAll() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// stall pauses before the StallAfter-th message.
func (s *Server) stall(n int64) {
	if s.opts.StallAfter > 0 && n == s.opts.StallAfter {
		time.Sleep(s.opts.Stall)
	}
}

// StartWebSocket runs a gorilla echo server until the test ends.
func StartWebSocket(t testing.TB, opts Options) *Server {
	t.Helper()
	s := newServer(opts)
	up := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Counted before the upgrade, while httptest still waits for the
		// request: Cleanup's wait then sees every handler.
		s.wg.Add(1)
		defer s.wg.Done()
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		s.track(c, c.RemoteAddr())
		defer s.untrack(c)
		defer c.Close()
		if opts.CloseIdleAfter > 0 {
			timer := time.AfterFunc(opts.CloseIdleAfter, func() { c.Close() })
			defer timer.Stop()
		}
		for i := 1; ; i++ {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			s.stall(s.Messages.Add(1))
			if opts.CloseAfter > 0 && i >= opts.CloseAfter {
				_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "enough"), time.Now().Add(time.Second))
				return
			}
			if opts.Silent {
				continue
			}
			if opts.Corrupt && len(msg) > 0 {
				msg[len(msg)-1] ^= 0xff
			}
			if opts.Text {
				typ = websocket.TextMessage
			}
			if opts.Binary {
				typ = websocket.BinaryMessage
			}
			if err := c.WriteMessage(typ, msg); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(h)
	s.URL = "ws" + strings.TrimPrefix(srv.URL, "http") + "/"
	t.Cleanup(func() {
		srv.Close()
		s.closeAll()
	})
	return s
}

// StartTCP runs a raw TCP echo server until the test ends.
func StartTCP(t testing.TB, opts Options) *Server {
	t.Helper()
	s := newServer(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.URL = "tcp://" + ln.Addr().String()
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.track(c, c.RemoteAddr())
			s.wg.Go(func() {
				defer s.untrack(c)
				defer c.Close()
				s.serveTCP(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.closeAll()
	})
	return s
}

func (s *Server) serveTCP(c net.Conn) {
	opts := s.opts
	if opts.CloseIdleAfter > 0 {
		timer := time.AfterFunc(opts.CloseIdleAfter, func() { c.Close() })
		defer timer.Stop()
	}
	buf := make([]byte, 16<<10)
	if opts.HoldFor > 0 {
		var held []byte
		_ = c.SetReadDeadline(time.Now().Add(opts.HoldFor))
		for {
			n, err := c.Read(buf)
			held = append(held, buf[:n]...)
			s.HeldBytes.Add(int64(n))
			if err != nil {
				if !errors.Is(err, net.ErrClosed) && isTimeout(err) {
					break
				}
				return
			}
		}
		_ = c.SetReadDeadline(time.Time{})
		if _, err := c.Write(held); err != nil {
			return
		}
	}
	for i := 1; ; i++ {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		s.stall(s.Messages.Add(1))
		if opts.CloseAfter > 0 && i >= opts.CloseAfter {
			return
		}
		if opts.Silent {
			continue
		}
		if opts.Corrupt {
			buf[n-1] ^= 0xff
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

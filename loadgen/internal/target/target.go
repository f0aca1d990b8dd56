// Package target is the load scenarios' one way to name and reach a target:
// a ws:// or wss:// URL (WebSocket, through gorilla/websocket or gobwas/ws)
// or a tcp:// or tls:// URL (a raw TCP stream, in TLS for tls://), dialled
// from a chosen source address when asked. A wss:// or tls:// target's
// certificate is verified against Options.TLS (see CheckTLS).
package target

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"
)

// The WebSocket client libraries, for Client.
const (
	Gorilla = "github.com/gorilla/websocket"
	Gobwas  = "github.com/gobwas/ws"
)

// URL is a parsed -url.
type URL struct {
	String string // ws[s]://HOST:PORT/PATH?QUERY, tcp://HOST:PORT or tls://HOST:PORT
	TCP    bool   // raw TCP, no WebSocket
	TLS    bool   // wss:// or tls://: in TLS
	Addr   string // HOST:PORT
	Host   string // HOST, for the default admin address
}

// URLForms is what -url accepts, for its errors.
const URLForms = "ws://HOST:PORT/PATH, wss://HOST:PORT/PATH, tcp://HOST:PORT or tls://HOST:PORT"

// ParseURL checks a -url value; the error names the flag, on one line.
func ParseURL(raw string) (URL, error) {
	u, err := url.Parse(raw)
	bare := u != nil && (u.Scheme == "tcp" || u.Scheme == "tls")
	switch {
	case err != nil || u.Host == "" || u.Port() == "" || u.User != nil || u.Fragment != "":
		return URL{}, fmt.Errorf("invalid value %q for flag -url: want %s", raw, URLForms)
	case bare && ((u.Path != "" && u.Path != "/") || u.RawQuery != ""):
		return URL{}, fmt.Errorf("invalid value %q for flag -url: a %s:// URL has no path: want %s://HOST:PORT", raw, u.Scheme, u.Scheme)
	case bare:
		return URL{String: u.Scheme + "://" + u.Host, TCP: true, TLS: u.Scheme == "tls", Addr: u.Host, Host: u.Hostname()}, nil
	case u.Scheme == "ws" || u.Scheme == "wss":
		if u.Path == "" {
			u.Path = "/"
		}
		return URL{String: u.String(), TLS: u.Scheme == "wss", Addr: u.Host, Host: u.Hostname()}, nil
	}
	return URL{}, fmt.Errorf("invalid value %q for flag -url: want %s", raw, URLForms)
}

// EnginePath is the path a Socket.IO server serves Engine.IO on.
const EnginePath = "/socket.io/"

// SocketIO reports whether u is a WebSocket URL on EnginePath: a
// Socket.IO target, where a bare WebSocket opens an Engine.IO session
// that never joins a namespace (the server counts no handshake for it).
func (u URL) SocketIO() bool {
	if u.TCP {
		return false
	}
	p, err := url.Parse(u.String)
	return err == nil && strings.TrimSuffix(p.Path, "/")+"/" == EnginePath
}

// NotSocketIO refuses a Socket.IO URL for a scenario that speaks bare
// WebSocket messages, pointing to the one that speaks Socket.IO.
func NotSocketIO(u URL, scenario string) error {
	if !u.SocketIO() {
		return nil
	}
	return fmt.Errorf("invalid value %q for flag -url: %s is a Socket.IO target's Engine.IO path, where %s's WebSocket messages are not Socket.IO events: use loadgen handshake -url http://%s (-echo), or loadgen conns to hold sockets", u.String, EnginePath, scenario, u.Addr)
}

// Options shape a dial.
type Options struct {
	Timeout time.Duration // the whole dial, upgrade included
	Source  netip.Addr    // the local address to bind; zero = the kernel's choice
	// WebSocket buffers (gorilla's defaults when 0); with WriteBufferPool
	// an idle connection holds no write buffer.
	ReadBuffer, WriteBuffer int
	WriteBufferPool         websocket.BufferPool
	// TLS is the client's TLS configuration for a wss:// or tls:// URL
	// (nil: the system's roots); the server name is the URL's host.
	TLS *tls.Config
}

func (o Options) netDialer() *net.Dialer { return NetDialer(o.Source, o.Timeout) }

// NetDialer dials from source (the zero Addr: the kernel's choice) with
// the port picked at connect time (bindControl), within timeout (0: no
// bound of its own).
func NetDialer(source netip.Addr, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, Control: bindControl}
	if source.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: source.AsSlice()}
	}
	return d
}

// DialTCP opens a raw TCP connection to u, in TLS (handshake done) for a
// tls:// URL.
func DialTCP(ctx context.Context, u URL, o Options) (net.Conn, error) {
	if u.TLS {
		d := &tls.Dialer{NetDialer: o.netDialer(), Config: o.TLS}
		return d.DialContext(ctx, "tcp", u.Addr)
	}
	return o.netDialer().DialContext(ctx, "tcp", u.Addr)
}

// DialWebSocket opens a WebSocket connection to u. A refused upgrade's
// error carries the HTTP status.
func DialWebSocket(ctx context.Context, u URL, o Options) (*websocket.Conn, error) {
	d := &websocket.Dialer{
		NetDialContext:   o.netDialer().DialContext,
		HandshakeTimeout: o.Timeout,
		ReadBufferSize:   o.ReadBuffer,
		WriteBufferSize:  o.WriteBuffer,
		WriteBufferPool:  o.WriteBufferPool,
		TLSClientConfig:  o.TLS,
	}
	c, res, err := d.DialContext(ctx, u.String, nil)
	if err != nil && res != nil && errors.Is(err, websocket.ErrBadHandshake) {
		err = &Refused{Status: res.StatusCode, Reason: reasonOf(res.Body)}
	}
	if res != nil && res.Body != nil {
		res.Body.Close()
	}
	if err != nil {
		if _, refused := err.(*Refused); res != nil && !refused {
			return nil, fmt.Errorf("%w (HTTP %s)", err, res.Status)
		}
		return nil, err
	}
	return c, nil
}

// DialWebSocketStream opens a WebSocket connection to u with gobwas/ws and
// returns the bare stream, for a caller that frames the messages itself
// (several to one write). r holds what the target sent after its upgrade
// response; read through it, never from c directly. A refused upgrade's
// error carries the HTTP status.
func DialWebSocketStream(ctx context.Context, u URL, o Options) (c net.Conn, r *bufio.Reader, err error) {
	var reason string
	d := ws.Dialer{
		NetDial:        o.netDialer().DialContext,
		Timeout:        o.Timeout,
		ReadBufferSize: o.ReadBuffer,
		TLSConfig:      o.TLS,
		OnStatusError:  func(_ int, _ []byte, res io.Reader) { reason = reasonOfResponse(res) },
	}
	c, r, _, err = d.Dial(ctx, u.String)
	if err != nil {
		if s, ok := err.(ws.StatusError); ok {
			return nil, nil, &Refused{Status: int(s), Reason: reason}
		}
		return nil, nil, err
	}
	if r == nil { // nothing came after the response: a buffer of our own
		r = bufio.NewReaderSize(c, max(o.ReadBuffer, 4096))
	}
	return c, r, nil
}

// Client names the client library for u, module (Gorilla or Gobwas) for a
// WebSocket, and its version, for reports.
func Client(u URL, module string) (name, version string) {
	switch {
	case u.TCP && u.TLS:
		return "crypto/tls (raw TCP in TLS)", runtime.Version()
	case u.TCP:
		return "net (raw TCP)", runtime.Version()
	}
	name = strings.TrimPrefix(module, "github.com/")
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == module {
				return name, d.Version
			}
		}
	}
	return name, "unknown"
}

// SourceList says which source addresses are used, briefly.
func SourceList(addrs []netip.Addr) string {
	switch len(addrs) {
	case 0:
		return "the kernel's choice"
	case 1:
		return addrs[0].String()
	}
	contiguous := true
	for i := 1; i < len(addrs); i++ {
		contiguous = contiguous && addrs[i] == addrs[i-1].Next()
	}
	if contiguous {
		return addrs[0].String() + "-" + addrs[len(addrs)-1].String()
	}
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

// BufferPool is gorilla's BufferPool over a sync.Pool: with it an idle
// connection holds no write buffer.
type BufferPool struct{ p sync.Pool }

func (b *BufferPool) Get() any  { return b.p.Get() }
func (b *BufferPool) Put(v any) { b.p.Put(v) }

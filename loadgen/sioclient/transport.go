package sioclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/parsers/engine/v3/packet"
	"github.com/zishang520/socket.io/parsers/engine/v3/parser"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// postTimeout bounds one polling write (an HTTP POST).
const postTimeout = 20 * time.Second

// transportSet returns the transports for a selection, each wrapped (see
// gatedTransport).
func transportSet(name string, g *gate, wrap func(engine.TransportCtor) engine.TransportCtor) (*types.Set[engine.TransportCtor], error) {
	var ctors []engine.TransportCtor
	switch name {
	case WebSocket:
		ctors = []engine.TransportCtor{socket.WebSocket}
	case Polling:
		ctors = []engine.TransportCtor{socket.Polling}
	case PollingWebSocket:
		ctors = []engine.TransportCtor{socket.Polling, socket.WebSocket}
	default:
		return nil, fmt.Errorf("bad transport %q: want %s", name, strings.Join(Transports, ", "))
	}
	set := types.NewSet[engine.TransportCtor]()
	for _, ctor := range ctors {
		if wrap != nil {
			ctor = wrap(ctor)
		}
		set.Add(&gatedCtor{TransportCtor: ctor, gate: g})
	}
	return set, nil
}

// gate holds back the opening of a connection's transports until its
// listeners are attached, and tracks the goroutines that the wrappers start.
type gate struct {
	open chan struct{}
	once sync.Once

	mu      sync.Mutex
	closing bool
	busy    int
	idle    chan struct{} // closed once closing and not busy
}

func newGate() *gate { return &gate{open: make(chan struct{}), idle: make(chan struct{})} }

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// start counts one more goroutine, unless the connection is closing.
func (g *gate) start() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.busy++
	return true
}

// done counts one goroutine less.
func (g *gate) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy--
	if g.closing && g.busy == 0 {
		close(g.idle)
	}
}

// wait stops new goroutines, lets any transport still held back see that it
// is closed, and waits (at most timeout) for the goroutines that run. It
// reports whether they are all done. It is safe to call twice.
func (g *gate) wait(timeout time.Duration) bool {
	g.mu.Lock()
	if !g.closing {
		g.closing = true
		if g.busy == 0 {
			close(g.idle)
		}
	}
	g.mu.Unlock()
	g.release()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-g.idle:
		return true
	case <-t.C:
		return false
	}
}

// gatedCtor builds wrapped transports.
type gatedCtor struct {
	engine.TransportCtor
	gate *gate
}

func (c *gatedCtor) New(s engine.Socket, opts engine.SocketOptionsInterface) engine.Transport {
	t := &gatedTransport{Transport: c.TransportCtor.New(s, opts), gate: c.gate, engine: s}
	if t.Name() == Polling {
		t.http = &http.Client{
			Timeout:   postTimeout,
			Jar:       s.CookieJar(),
			Transport: &http.Transport{TLSClientConfig: opts.TLSClientConfig(), Proxy: http.ProxyFromEnvironment},
		}
	}
	return t
}

// gatedTransport wraps one of the client's transports to fix three of its
// races and stalls:
//
//   - Open returns at once. The real Open (for WebSocket, a blocking dial)
//     runs on its own goroutine once the gate is released, that is once the
//     Manager has subscribed to the Engine.IO socket; a Close that comes
//     first, or during the dial, is honoured once the dial returns.
//   - After the real Open, the Engine.IO socket is flushed. The WebSocket
//     transport starts its reader goroutine before it marks itself writable:
//     when the reader gets the server's OPEN first, the namespace CONNECT is
//     buffered on a transport that is not writable yet, and nothing flushes
//     it until the next ping (25 s by default).
//   - Polling writes (HTTP POST) go out on their own. The client's polling
//     transport runs the long-poll GET and the POSTs on one queue, so a
//     packet sent while a GET is pending (every emit after the handshake:
//     `echo`, DISCONNECT, CLOSE) waits for the server to end that GET,
//     normally its next ping. Here Send posts at once, one POST at a time,
//     and Close posts the CLOSE packet itself, so that the server ends the
//     session (and the pending GET) at once.
type gatedTransport struct {
	engine.Transport
	gate   *gate
	engine engine.Socket
	http   *http.Client // polling only

	mu     sync.Mutex
	closed bool

	post sync.Mutex // one POST at a time, as the protocol requires
}

func (t *gatedTransport) Open() engine.Transport {
	if !t.gate.start() {
		t.markClosed()
		return t
	}
	go func() {
		defer t.gate.done()
		<-t.gate.open
		if t.isClosed() {
			return
		}
		t.Transport.Open()
		if t.isClosed() {
			// Closed while dialling: the dial has now returned, close
			// what it opened.
			t.Transport.Close()
			return
		}
		t.engine.Flush()
	}()
	return t
}

func (t *gatedTransport) Close() engine.Transport {
	if !t.markClosed() {
		return t
	}
	if t.http != nil && t.ReadyState() == engine.TransportStateOpen {
		// Best effort: the CLOSE packet, before the client's own CLOSE,
		// which waits behind the pending GET.
		_ = t.postPackets([]*packet.Packet{{Type: packet.CLOSE}})
	}
	t.Transport.Close()
	if t.http != nil {
		t.http.CloseIdleConnections()
	}
	return t
}

// Send writes packets. WebSocket: as the client does. Polling: one POST on
// its own goroutine; writable again, and "drain", once it is done.
func (t *gatedTransport) Send(packets []*packet.Packet) {
	if t.http == nil || t.ReadyState() != engine.TransportStateOpen {
		t.Transport.Send(packets)
		return
	}
	if t.isClosed() || !t.gate.start() {
		return
	}
	t.SetWritable(false)
	go func() {
		defer t.gate.done()
		if err := t.postPackets(packets); err != nil {
			t.OnError("fetch write error", err, nil)
			return
		}
		t.SetWritable(true)
		t.Emit("drain")
	}()
}

// postPackets sends packets in one polling POST.
func (t *gatedTransport) postPackets(packets []*packet.Packet) error {
	t.post.Lock()
	defer t.post.Unlock()
	data, err := parser.Parserv4().EncodePayload(packets)
	if err != nil {
		return err
	}
	scheme := "http"
	if t.Opts().Secure() {
		scheme = "https"
	}
	query := url.Values{}
	for k, vs := range t.Query() {
		query[k] = append([]string(nil), vs...)
	}
	if t.Opts().TimestampRequests() {
		query.Set(t.Opts().TimestampParam(), strconv.FormatInt(time.Now().UnixNano(), 36))
	}
	ctx, cancel := context.WithTimeout(context.Background(), postTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.CreateUri(scheme, query).String(), data)
	if err != nil {
		return err
	}
	for k, vs := range t.Opts().ExtraHeaders() {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	res, err := t.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("POST: %s", res.Status)
	}
	return nil
}

// markClosed marks the transport closed; it reports whether it was open.
func (t *gatedTransport) markClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := !t.closed
	t.closed = true
	return was
}

func (t *gatedTransport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

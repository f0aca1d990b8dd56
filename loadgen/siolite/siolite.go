// Package siolite is a lean Socket.IO v5 client over WebSocket only, for
// holding many connections from one load process. A connection is read
// on a Loop's event loops (Options.Loop), or is a gorilla WebSocket and
// one reader goroutine; either answers the server's pings and hands on
// events and acks, and writes go out under a lock from whichever
// goroutine makes them. It joins one namespace ("/" unless
// Options.Namespace says another) and sends JSON arguments (no binary
// attachments), which is what loadgen sustain and conns need.
//
// It exists because the zishang520 client (loadgen/sioclient) holds
// several goroutines, timers and buffers per connection: at 100,000
// connections on a 2-core machine the load client, not the target, ran
// out of CPU first (scripts/bench/README.md has the figures).
package siolite

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/gorilla/websocket"
	"github.com/knowngood/knowngood/shared/wsframe"
	"github.com/panjf2000/gnet/v2"
)

// Errors a caller may group by.
var (
	ErrAckTimeout = errors.New("ack timed out")
	ErrClosed     = errors.New("connection closed before the ack")
	ErrDeadline   = errors.New("deadline exceeded")
)

// writeWait bounds one write: a target that stops reading does not hold
// a timer's goroutine for ever.
const writeWait = 10 * time.Second

// maxPacket bounds what one packet from the server may hold: loadgen
// receives acks and pushes of a few hundred bytes.
const maxPacket = 1 << 20

// writePool lends every connection its write buffer only while it
// writes: a held connection that is quiet then costs its read buffer
// alone (512 bytes; a sustain packet is under 200, larger ones are read
// in several pieces).
var writePool sync.Pool

// Options describe one connection.
type Options struct {
	URL string // http(s)://HOST:PORT of the server
	// Namespace is the namespace the connection joins; "" is "/".
	Namespace string
	TLS       *tls.Config // for https://, nil for the defaults
	// NetDial opens the TCP connection (from a chosen source address,
	// say); nil: net.Dialer's.
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// AckTimeout is how long an ack is waited for; zero: 10 s. On a Loop
	// it is checked once a second, so an ack times out up to a second
	// after it.
	AckTimeout time.Duration
	// OnEvent gets every event the server emits to the namespace, on the reader
	// goroutine: it must not block.
	OnEvent func(name string, args []json.RawMessage)
	// OnClose is called once when the connection ends other than by
	// Close (the server closed it, a read failed, no ping came in time).
	OnClose func(err error)
	// Loop, when set, reads the connection on its event loops instead of
	// a goroutine of its own (http:// only: https:// stays on one).
	Loop *Loop
}

// Conn is one connected Socket.IO client.
type Conn struct {
	o   Options
	ws  *websocket.Conn // on a goroutine: gorilla's
	id  string
	nsp string // what follows a packet's type in the namespace: "" for "/", else "/name,"

	// On a Loop: the bare socket and its reader until the CONNECT is
	// done (then enrolled), then the loop's connection (g, set in OnOpen),
	// and the loop's state of it: bytes of a frame cut short, a
	// fragmented message, when it last read, why it ended.
	raw      net.Conn
	br       *bufio.Reader
	loop     *Loop
	g        gnet.Conn
	carry    []byte
	frag     []byte
	viaLoop  bool // a write did not fit: the rest, and every write after it, go through the loop
	fdClosed bool // OnClose has come: the descriptor is the loop's to close (under wmu)
	pingWait time.Duration
	lastRead atomic.Int64
	endErr   atomic.Pointer[error]

	wmu sync.Mutex // one writer at a time, as gorilla requires

	mu      sync.Mutex
	nextAck int64
	acks    map[int64]*pending
	closing bool

	done chan struct{} // closed when the reader has returned
}

// pending is an emit waiting for its ack. On a Loop its timeout is a
// deadline the loop's sweep checks once a second (a timer made and
// stopped per emit showed in the load client's profile); on a goroutine
// it is a timer.
type pending struct {
	done     func(args []json.RawMessage, err error)
	timer    *time.Timer // nil on a Loop
	deadline int64       // Unix ns, on a Loop
}

// claim reports whether the caller, which has taken p out of the acks
// map, is the one to call done: a timer that has fired calls it itself.
func (p *pending) claim() bool { return p.timer == nil || p.timer.Stop() }

// handshake is the Engine.IO OPEN packet's fields the client uses.
type handshake struct {
	SID          string `json:"sid"`
	PingInterval int64  `json:"pingInterval"` // ms
	PingTimeout  int64  `json:"pingTimeout"`  // ms
}

// Dial opens the WebSocket, reads the Engine.IO OPEN and connects to the
// namespace, all before ctx's deadline.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	wsURL, err := socketURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 10 * time.Second
	}
	if o.Loop != nil && o.TLS == nil && strings.HasPrefix(wsURL, "ws:") {
		return dialOnLoop(ctx, o, wsURL)
	}
	d := websocket.Dialer{ReadBufferSize: 512, WriteBufferSize: 512, WriteBufferPool: &writePool,
		TLSClientConfig: o.TLS, HandshakeTimeout: 45 * time.Second, NetDialContext: o.NetDial}
	ws, resp, err := d.DialContext(ctx, wsURL, nil)
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("websocket upgrade answered HTTP %d", resp.StatusCode)
		}
		return nil, ctxErr(ctx, err)
	}
	ws.SetReadLimit(maxPacket)
	c := &Conn{o: o, ws: ws, nsp: nspPrefix(o.Namespace), acks: map[int64]*pending{}, done: make(chan struct{})}
	hs, err := c.connect(ctx)
	if err != nil {
		ws.Close()
		return nil, ctxErr(ctx, err)
	}
	// Node's client gives up on a server whose ping is later than the
	// interval and the timeout together; so does this one.
	pingWait := time.Duration(hs.PingInterval+hs.PingTimeout) * time.Millisecond
	go c.read(pingWait)
	return c, nil
}

// dialOnLoop is Dial for a connection read on o.Loop.
func dialOnLoop(ctx context.Context, o Options, wsURL string) (*Conn, error) {
	c, err := dialLoop(ctx, o, wsURL)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	hs, err := c.connect(ctx)
	if err == nil {
		_ = c.raw.SetDeadline(time.Time{})
		err = o.Loop.enroll(c, time.Duration(hs.PingInterval+hs.PingTimeout)*time.Millisecond)
	}
	if err != nil {
		_ = c.raw.Close()
		return nil, ctxErr(ctx, err)
	}
	return c, nil
}

// nspPrefix is what follows a packet's type for namespace: nothing for
// "/", the name and a comma for another.
func nspPrefix(namespace string) string {
	if namespace == "" || namespace == "/" {
		return ""
	}
	return namespace + ","
}

// socketURL is the Engine.IO WebSocket endpoint of an http(s) URL.
func socketURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("bad URL %q: want http://HOST:PORT", raw)
	}
	scheme := "ws"
	if u.Scheme == "https" {
		scheme = "wss"
	}
	return scheme + "://" + u.Host + "/socket.io/?EIO=4&transport=websocket", nil
}

// ctxErr names a failure that came from ctx's deadline as such.
func ctxErr(ctx context.Context, err error) error {
	// The dial's and the reads' own deadlines are ctx's, and may pass a
	// moment before ctx says so.
	deadline, ok := ctx.Deadline()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (ok && !time.Now().Before(deadline)) {
		return ErrDeadline
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// connect reads the OPEN, sends the namespace CONNECT and reads its
// answer; a ping before it is answered.
func (c *Conn) connect(ctx context.Context) (handshake, error) {
	var hs handshake
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.netConn().SetReadDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.netConn().SetReadDeadline(time.Now()) })
	defer stop()
	msg, err := c.readMessage()
	if err != nil {
		return hs, err
	}
	if len(msg) == 0 || msg[0] != '0' || json.Unmarshal(msg[1:], &hs) != nil || hs.PingInterval <= 0 {
		return hs, fmt.Errorf("no Engine.IO OPEN: %.60q", msg)
	}
	if err := c.write([]byte("40" + c.nsp)); err != nil {
		return hs, err
	}
	connected, refused := []byte("40"+c.nsp), []byte("44"+c.nsp)
	for {
		msg, err := c.readMessage()
		if err != nil {
			return hs, err
		}
		switch {
		case string(msg) == "2":
			if err := c.write([]byte("3")); err != nil {
				return hs, err
			}
		case bytes.HasPrefix(msg, connected):
			var ok struct {
				SID string `json:"sid"`
			}
			_ = json.Unmarshal(msg[len(connected):], &ok)
			c.id = ok.SID
			return hs, nil
		case bytes.HasPrefix(msg, refused):
			var refusal struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(msg[len(refused):], &refusal)
			return hs, fmt.Errorf("connect_error: %s", refusal.Message)
		default:
			return hs, fmt.Errorf("unexpected packet before CONNECT: %.60q", msg)
		}
	}
}

// netConn is the socket, before a loop takes it.
func (c *Conn) netConn() net.Conn {
	if c.raw != nil {
		return c.raw
	}
	return c.ws.NetConn()
}

func (c *Conn) readMessage() ([]byte, error) {
	if c.raw != nil {
		return c.readRaw()
	}
	typ, msg, err := c.ws.ReadMessage()
	if err == nil && typ != websocket.TextMessage {
		err = errors.New("binary frame: this client sends no binary attachments")
	}
	return msg, err
}

// read is the connection's one goroutine: pings, events, acks, until the
// connection ends.
func (c *Conn) read(pingWait time.Duration) {
	var err error
	for err == nil {
		_ = c.ws.SetReadDeadline(time.Now().Add(pingWait))
		var msg []byte
		if msg, err = c.readMessage(); err == nil {
			err = c.handle(msg)
		}
	}
	_ = c.ws.Close()
	c.finish(err)
}

// finish ends the connection once its reader has stopped with err: the
// pending acks fail, and OnClose hears of it unless Close began it.
func (c *Conn) finish(err error) {
	c.mu.Lock()
	ours := c.closing
	c.closing = true
	acks := c.acks
	c.acks = nil
	c.mu.Unlock()
	close(c.done) // before the callbacks, which may call Close
	for _, p := range acks {
		if p.claim() && !ours {
			p.done(nil, ErrClosed)
		}
	}
	if !ours && c.o.OnClose != nil {
		c.o.OnClose(err)
	}
}

// errServerClose ends the reader on the server's Engine.IO CLOSE or
// Socket.IO DISCONNECT.
var errServerClose = errors.New("the server closed the connection")

// handle is one Engine.IO packet from the server.
func (c *Conn) handle(msg []byte) error {
	if len(msg) == 0 {
		return errors.New("empty packet")
	}
	switch msg[0] {
	case '2': // ping
		return c.write([]byte("3"))
	case '1':
		return errServerClose
	case '4':
		return c.handleSIO(msg[1:])
	}
	return nil // pong, noop: nothing to do
}

// handleSIO is one Socket.IO packet of the connection's namespace;
// those of another namespace are not this client's.
func (c *Conn) handleSIO(p []byte) error {
	if len(p) == 0 {
		return errors.New("empty Socket.IO packet")
	}
	typ, rest := p[0], p[1:]
	if c.nsp != "" {
		if !bytes.HasPrefix(rest, []byte(c.nsp)) {
			return nil
		}
		rest = rest[len(c.nsp):]
	} else if len(rest) > 0 && rest[0] == '/' {
		return nil
	}
	switch typ {
	case '1':
		return errServerClose
	case '2': // an event, perhaps with an ack id this client does not answer
		_, body := ackID(rest)
		var args []json.RawMessage
		if json.Unmarshal(body, &args) != nil || len(args) == 0 {
			return fmt.Errorf("bad event %.60q", p)
		}
		var name string
		if json.Unmarshal(args[0], &name) != nil {
			return fmt.Errorf("bad event name %.60q", p)
		}
		if c.o.OnEvent != nil {
			c.o.OnEvent(name, args[1:])
		}
	case '3':
		id, body := ackID(rest)
		var args []json.RawMessage
		if id < 0 || json.Unmarshal(body, &args) != nil {
			return fmt.Errorf("bad ack %.60q", p)
		}
		c.mu.Lock()
		pa := c.acks[id]
		delete(c.acks, id)
		c.mu.Unlock()
		if pa != nil && pa.claim() {
			pa.done(args, nil)
		}
	}
	return nil
}

// ackID splits the leading decimal ack id off b; -1 when there is none.
func ackID(b []byte) (int64, []byte) {
	i := 0
	for i < len(b) && i < 16 && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 {
		return -1, b
	}
	id, _ := strconv.ParseInt(string(b[:i]), 10, 64)
	return id, b[i:]
}

// write sends one Engine.IO packet.
func (c *Conn) write(packet []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	switch {
	case c.g != nil:
		return c.writeOnLoop(wsframe.ClientFrame(ws.OpText, packet))
	case c.raw != nil:
		_ = c.raw.SetWriteDeadline(time.Now().Add(writeWait))
		return wsutil.WriteClientText(c.raw, packet)
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
	return c.ws.WriteMessage(websocket.TextMessage, packet)
}

// ID is the Socket.IO id the server gave the connection.
func (c *Conn) ID() string { return c.id }

// Emit sends an event without an ack.
func (c *Conn) Emit(event string, args ...any) error {
	packet, err := eventPacket(c.nsp, -1, event, args)
	if err != nil {
		return err
	}
	return c.write(packet)
}

// EmitWithAck sends an event that asks for an ack; done gets the ack's
// arguments, or ErrAckTimeout, or ErrClosed when the server ended the
// connection first. After Close, done is not called.
func (c *Conn) EmitWithAck(event string, args []any, done func(args []json.RawMessage, err error)) error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return ErrClosed
	}
	id := c.nextAck
	c.nextAck++
	pa := &pending{done: done}
	if c.loop != nil {
		pa.deadline = time.Now().Add(c.o.AckTimeout).UnixNano()
	} else {
		pa.timer = time.AfterFunc(c.o.AckTimeout, func() {
			c.mu.Lock()
			delete(c.acks, id)
			c.mu.Unlock()
			done(nil, ErrAckTimeout)
		})
	}
	c.acks[id] = pa
	c.mu.Unlock()
	packet, err := eventPacket(c.nsp, id, event, args)
	if err == nil {
		err = c.write(packet)
	}
	if err != nil {
		c.mu.Lock()
		delete(c.acks, id)
		c.mu.Unlock()
		if pa.timer != nil {
			pa.timer.Stop()
		}
	}
	return err
}

// Close leaves the namespace, closes the WebSocket and waits for the
// reader. Pending acks are dropped: the caller chose to go.
func (c *Conn) Close() error {
	c.mu.Lock()
	already := c.closing
	c.closing = true
	c.mu.Unlock()
	if !already && c.loop != nil {
		// The DISCONNECT and the close frame, then the close, in turn on
		// the loop; a connection already ended has its done closed.
		c.wmu.Lock()
		bye := append(wsframe.ClientFrame(ws.OpText, []byte("41"+c.nsp)), wsframe.ClientFrame(ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))...)
		_ = c.writeOnLoop(bye)
		c.wmu.Unlock()
		// After the writes above: the loop runs its tasks in order.
		_ = c.g.Close()
	} else if !already {
		c.wmu.Lock()
		_ = c.ws.SetWriteDeadline(time.Now().Add(time.Second))
		_ = c.ws.WriteMessage(websocket.TextMessage, []byte("41"+c.nsp))
		_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		c.wmu.Unlock()
		_ = c.ws.Close()
	}
	<-c.done
	return nil
}

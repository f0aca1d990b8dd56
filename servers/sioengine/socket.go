package sioengine

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxPendingConnects bounds the CONNECTs of one session waiting in the
// namespace middleware; more close the session.
const maxPendingConnects = 16

// Socket is a session's membership of one namespace.
type Socket struct {
	id    string
	conn  *Conn
	nsp   *Namespace
	auth  json.RawMessage
	rooms []string // under nsp.mu
	// pid is the private id a client recovers the socket with (with
	// Options.Recovery); recovered: it came back so.
	pid       string
	recovered bool
}

// ID is the socket's id (the CONNECT ack's sid).
func (s *Socket) ID() string { return s.id }

// Conn is the socket's session.
func (s *Socket) Conn() *Conn { return s.conn }

// Namespace is the socket's namespace.
func (s *Socket) Namespace() *Namespace { return s.nsp }

// Auth is the CONNECT's auth payload, a JSON object ({} when none).
func (s *Socket) Auth() json.RawMessage { return s.auth }

// Emit sends an event to this socket. With Options.Recovery it is kept
// with its offset, as Node sends it to the socket's own room then.
func (s *Socket) Emit(event string, args []json.RawMessage, attachments [][]byte) bool {
	if r := s.nsp.rec; r != nil {
		sent := false
		r.keep(s.nsp.name, []string{s.id}, nil, event, args, attachments, func(frames []*frame) { sent = s.conn.send(frames...) })
		return sent
	}
	return s.conn.send(encodeEvent(s.nsp.name, event, -1, args, attachments, false)...)
}

// Join puts the socket in a room; false if it has left its namespace or
// is in maxRooms rooms already.
func (s *Socket) Join(room string) bool {
	ok, added := s.nsp.join(s, room)
	if h := s.conn.srv.opts.Hooks.Joined; added && h != nil {
		h(s, room)
	}
	return ok
}

// Disconnect sends the client a DISCONNECT for the namespace and removes
// the socket; the session stays open.
func (s *Socket) Disconnect() {
	c := s.conn
	c.mu.Lock()
	if c.sockets[s.nsp.name] != s {
		c.mu.Unlock()
		return
	}
	delete(c.sockets, s.nsp.name)
	f := &frame{data: appendHeader(nil, sioDisconnect, 0, s.nsp.name, -1)}
	if c.state == stateOpen {
		c.enqueueLocked(f)
	}
	c.mu.Unlock()
	if h := c.srv.opts.Hooks.Disconnected; h != nil {
		h(s, "server namespace disconnect")
	}
	s.nsp.remove(s)
}

// DisconnectSockets sends every socket of the session a DISCONNECT.
func (c *Conn) DisconnectSockets() {
	for _, s := range c.Sockets() {
		s.Disconnect()
	}
}

// Event is one event a client sent.
type Event struct {
	Name string
	// Args are the event's arguments after its name, as the client wrote
	// them; binary placeholders stay in them and index Attachments.
	Args        []json.RawMessage
	Attachments [][]byte
	sock        *Socket
	id          int64
	once        sync.Once
}

// HasAck reports whether the client asked for an acknowledgement.
func (e *Event) HasAck() bool { return e.id >= 0 }

// Ack answers the event's acknowledgement (once; later calls do
// nothing).
func (e *Event) Ack(args []json.RawMessage, attachments [][]byte) {
	if e.id < 0 {
		return
	}
	e.once.Do(func() {
		e.sock.conn.send(encodeEvent(e.sock.nsp.name, "", e.id, args, attachments, false)...)
	})
}

// partialPacket is a binary packet waiting for its attachments.
type partialPacket struct {
	p           sioPacket
	attachments [][]byte
}

// onPacket handles one Engine.IO packet of the session's transport.
func (c *Conn) onPacket(p inPacket) {
	if !c.isOpen() {
		return // Node reads nothing more of a session that is closing
	}
	switch p.typ {
	case eioPong:
		if c.eio3 {
			// Engine.IO v3: only the client pings (Node: "invalid
			// heartbeat direction").
			c.terminate("transport error")
			return
		}
		c.pong()
	case eioPing:
		if c.eio3 {
			c.pingV3()
			return
		}
		// Engine.IO v4: only the server pings.
		c.terminate("transport error")
	case eioMessage:
		if h := c.srv.opts.Hooks.Received; h != nil {
			h(c, p.data, p.binary)
		}
		if err := c.onMessage(p); err != nil {
			c.Close()
		}
	}
}

// onMessage decodes a Socket.IO packet or an attachment.
func (c *Conn) onMessage(p inPacket) error {
	c.mu.Lock()
	partial := c.partial
	c.mu.Unlock()
	if p.binary {
		if partial == nil {
			return fmt.Errorf("%w: binary data when not reconstructing a packet", errBadPacket)
		}
		partial.attachments = append(partial.attachments, append([]byte(nil), p.data...))
		if len(partial.attachments) < partial.p.attachments {
			return nil
		}
		c.mu.Lock()
		c.partial = nil
		c.mu.Unlock()
		c.dispatch(partial.p, partial.attachments)
		return nil
	}
	if partial != nil {
		return fmt.Errorf("%w: text while reconstructing a packet", errBadPacket)
	}
	sp, err := parseSIO(append([]byte(nil), p.data...), c.srv.opts.MaxAttachments)
	if err != nil {
		return err
	}
	if sp.attachments > 0 {
		c.mu.Lock()
		c.partial = &partialPacket{p: sp}
		c.mu.Unlock()
		return nil
	}
	c.dispatch(sp, nil)
	return nil
}

// dispatch acts on a whole Socket.IO packet.
func (c *Conn) dispatch(p sioPacket, attachments [][]byte) {
	if p.typ == sioConnect {
		c.connect(p)
		return
	}
	c.mu.Lock()
	s := c.sockets[p.nsp]
	c.mu.Unlock()
	if s == nil {
		return // not joined (or not yet): Node drops it too
	}
	switch p.typ {
	case sioDisconnect:
		c.mu.Lock()
		if c.sockets[p.nsp] == s {
			delete(c.sockets, p.nsp)
		}
		c.mu.Unlock()
		if h := c.srv.opts.Hooks.Disconnected; h != nil {
			h(s, "client namespace disconnect")
		}
		s.nsp.remove(s)
	case sioEvent, sioBinaryEvent:
		elems := splitArray(p.data)
		e := &Event{Args: elems[1:], Attachments: attachments, sock: s, id: p.id}
		if json.Unmarshal(elems[0], &e.Name) != nil {
			e.Name = string(elems[0]) // a number
		}
		if h := c.srv.opts.Hooks.Event; h != nil {
			h(s, e)
		}
	}
}

// greet: Socket.IO v2 has no CONNECT for "/"; a v3 session joins it
// at its open, after the open packet, as Node's socket.io does.
func (c *Conn) greet() {
	if c.eio3 {
		c.connect(sioPacket{typ: sioConnect, nsp: "/", id: -1})
	}
}

// connect runs a namespace CONNECT through the middleware.
func (c *Conn) connect(p sioPacket) {
	name, auth := p.nsp, json.RawMessage(p.data)
	if c.eio3 {
		name, auth = splitQuery(p.nsp)
	}
	nsp := c.srv.joinable(name)
	if nsp == nil {
		c.refuseConnect(name, "Invalid namespace", false)
		return
	}
	if len(auth) == 0 {
		auth = json.RawMessage("{}")
	}
	s := &Socket{id: newID(), conn: c, nsp: nsp, auth: auth}
	if nsp.rec != nil && !c.eio3 {
		var then func()
		// Node's skipMiddlewares: a socket that comes back is not put
		// through the middleware again.
		if nsp.rec.restoreFor(auth, func(kept *keptSession, missed [][]*frame) {
			s.id, s.pid, s.recovered = kept.sid, kept.pid, true
			c.mu.Lock()
			c.pending++
			c.mu.Unlock()
			then = c.admitWith(s, nil, kept.rooms, missed)
		}) {
			then()
			return
		}
		s.pid = newID()
	}
	c.mu.Lock()
	if c.pending >= maxPendingConnects {
		c.mu.Unlock()
		c.Close()
		return
	}
	c.pending++
	c.mu.Unlock()
	var once sync.Once
	next := func(err error) { once.Do(func() { c.admit(s, err) }) }
	if h := c.srv.opts.Hooks.Connecting; h != nil {
		h(s, next)
		return
	}
	next(nil)
}

// admit ends a CONNECT's middleware: the ack, or a CONNECT_ERROR.
func (c *Conn) admit(s *Socket, err error) { c.admitWith(s, err, nil, nil)() }

// admitWith registers s, or refuses it, and returns the rest, which runs
// the hooks and may close the session: a socket that comes back is
// registered under its namespace's recovery lock (recovery.restore), and
// the rest runs after that is let go. Such a socket rejoins its rooms, and
// the events it missed go out before its CONNECT ack, as Node writes them
// (socket.io-client holds them until the ack).
func (c *Conn) admitWith(s *Socket, err error, rooms []string, missed [][]*frame) (then func()) {
	c.mu.Lock()
	c.pending--
	if c.state != stateOpen {
		c.mu.Unlock()
		return func() {}
	}
	if err != nil {
		c.mu.Unlock()
		return func() { c.refuseConnect(s.nsp.name, err.Error(), c.eio3) }
	}
	if c.ackedAt.IsZero() && !time.Now().Before(c.connectBy) {
		// The connect timeout was due before the middleware ended: its
		// timer, late on a loaded process, would have closed the session
		// first on Node, whose timers run on time. So it does here.
		c.mu.Unlock()
		return c.Close
	}
	old := c.sockets[s.nsp.name]
	if c.sockets == nil {
		c.sockets = map[string]*Socket{}
	}
	c.sockets[s.nsp.name] = s
	if c.ackedAt.IsZero() {
		c.ackedAt = time.Now()
	}
	c.connectTmr.Stop()
	for _, frames := range missed {
		for _, f := range frames {
			c.appendLocked(f)
		}
	}
	ack := &frame{data: appendHeader(nil, sioConnect, 0, s.nsp.name, -1)}
	switch {
	case c.eio3: // Socket.IO v2's ack carries no sid
	case s.pid != "":
		ack.data = fmt.Appendf(ack.data, `{"sid":"%s","pid":"%s"}`, s.id, s.pid)
	default:
		ack.data = fmt.Appendf(ack.data, `{"sid":"%s"}`, s.id)
	}
	c.enqueueLocked(ack)
	// A member before the ack can be written (the writer needs mu).
	s.nsp.add(s)
	for _, room := range rooms {
		s.nsp.join(s, room)
	}
	c.mu.Unlock()
	return func() { c.connected(s, old) }
}

// connected runs the hooks of s's admission, which replaced old, if any.
func (c *Conn) connected(s, old *Socket) {
	if old != nil {
		// A second CONNECT to the namespace replaces the socket.
		if h := c.srv.opts.Hooks.Disconnected; h != nil {
			h(old, "client namespace disconnect")
		}
		old.nsp.remove(old)
	}
	if h := c.srv.opts.Hooks.Connected; h != nil {
		h(s)
	}
}

// refuseConnect answers a CONNECT_ERROR; bare, the message alone (what
// Node's socket.io sends a v2 client its middleware refused), or in an
// object.
func (c *Conn) refuseConnect(nsp, message string, bare bool) {
	msg, _ := json.Marshal(message)
	f := &frame{data: appendHeader(nil, sioConnectError, 0, nsp, -1)}
	if bare {
		f.data = append(f.data, msg...)
	} else {
		f.data = fmt.Appendf(f.data, `{"message":%s}`, msg)
	}
	if c.send(f) {
		if h := c.srv.opts.Hooks.Refused; h != nil {
			h(c)
		}
	}
}

// splitQuery reads a Socket.IO v2 CONNECT's namespace, "/name?query":
// Node's socket.io takes the path for the namespace and the query, as an
// object of strings, for the auth payload.
func splitQuery(nsp string) (string, json.RawMessage) {
	path, query, found := strings.Cut(nsp, "?")
	if !found {
		return path, nil
	}
	values, _ := url.ParseQuery(query)
	auth := make(map[string]string, len(values))
	for k, v := range values {
		auth[k] = v[len(v)-1]
	}
	b, _ := json.Marshal(auth)
	return path, b
}

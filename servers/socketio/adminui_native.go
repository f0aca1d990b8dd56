package socketio

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/knowngood/knowngood/servers/sioengine"
)

// nativeAdmin serves the Admin UI (adminui.go) on the native engine:
// the engine's hooks feed it.
type nativeAdmin struct {
	n   *native
	hub *adminHub[*sioengine.Socket]
}

// nativeHandshake is what a session's open request said, kept for the
// Admin UI's lists (-admin-ui only: the engine itself keeps no request
// headers).
type nativeHandshake struct {
	remote string
	header http.Header
	url    string
	issued time.Time
	secure bool
}

// instrument hooks the Admin UI into the engine's options before the
// engine is made: /admin is one of its namespaces, the admin listener's
// origin one it answers, and every hook that feeds the Admin UI is
// wrapped around the target's own.
func (n *native) instrument(o *sioengine.Options) {
	a := &nativeAdmin{n: n}
	a.hub = newAdminHub[*sioengine.Socket](a, n.m)
	n.admin = a
	o.Namespaces = append(o.Namespaces, adminNamespace)
	o.AllowOrigin = n.cfg.AdminUI.AllowsOrigin
	h := &o.Hooks
	opened, closed, connecting, connected, event := h.Opened, h.Closed, h.Connecting, h.Connected, h.Event
	received, sent := h.Received, h.Sent
	h.Opened = func(c *sioengine.Conn, r *http.Request) {
		opened(c, r)
		sess := c.Data.(*nativeSession)
		if r.URL.Query().Get("EIO") != "4" {
			sess.kind.legacy()
		}
		sess.handshake = &nativeHandshake{remote: r.RemoteAddr, header: r.Header, url: r.URL.RequestURI(), issued: time.Now(), secure: r.TLS != nil}
		a.hub.counts.opened()
	}
	h.Closed = func(c *sioengine.Conn, reason string) {
		sess := c.Data.(*nativeSession)
		if sess.kind.close() {
			// The Admin UI's session: counted in no figure but
			// connections_total.
			n.freeze.unbind(c.ID())
			sess.release.Do(n.gate.Release)
			a.hub.sessions.Add(-1)
			return
		}
		a.hub.counts.closed(reason)
		closed(c, reason)
	}
	h.Connecting = func(s *sioengine.Socket, next func(error)) {
		switch {
		case s.Namespace().Name() == adminNamespace || connecting == nil:
			// instrument's namespace has no middleware of the target's.
			next(nil)
		default:
			connecting(s, next)
		}
	}
	h.Connected = func(s *sioengine.Socket) {
		if s.Namespace().Name() == adminNamespace {
			a.hub.adminConnected(s)
			return
		}
		connected(s)
		if a.hub.watching() && a.hub.room() {
			a.hub.roomJoined(s.Namespace().Name(), s.ID(), s.ID()) // its own room, as Node's adapter tells
			a.hub.socketConnected(a.serialize(s))
		}
	}
	h.Event = func(s *sioengine.Socket, e *sioengine.Event) {
		if s.Namespace().Name() == adminNamespace {
			a.hub.order(e.Name, e.Args)
			return
		}
		event(s, e)
	}
	h.Received = func(c *sioengine.Conn, data []byte, binary bool) {
		sess := c.Data.(*nativeSession)
		// The session's first CONNECT, read before the engine acts on it:
		// one that names /admin makes it the Admin UI's.
		if !binary && len(data) > 0 && data[0] == socketIOConnect && sess.kind.firstConnect(connectNamespace(data)) {
			sess.settled.Store(true) // its handshake is not counted
			a.hub.sessions.Add(1)
			a.hub.counts.adminSession()
			n.m.AdminUISession(sess.transport)
		}
		if !sess.kind.admin() {
			received(c, data, binary)
			a.hub.counts.in(len(data))
		}
	}
	h.Sent = func(c *sioengine.Conn, bytes int) {
		if !c.Data.(*nativeSession).kind.admin() {
			sent(c, bytes)
			a.hub.counts.out(bytes)
		}
	}
	h.Disconnected = func(s *sioengine.Socket, reason string) {
		name := s.Namespace().Name()
		if name == adminNamespace {
			a.hub.adminLeft(s)
			return
		}
		if !a.hub.watching() {
			return
		}
		a.hub.socketDisconnected(name, s.ID(), reason)
		for _, room := range s.Rooms() {
			a.hub.roomLeft(name, room, s.ID())
		}
	}
	h.Upgraded = func(c *sioengine.Conn) {
		if !a.hub.watching() {
			return
		}
		for _, s := range c.Sockets() {
			if s.Namespace().Name() != adminNamespace {
				a.hub.socketUpdated(s.Namespace().Name(), s.ID(), sioengine.WebSocket)
			}
		}
	}
	h.Joined = func(s *sioengine.Socket, room string) {
		if s.Namespace().Name() != adminNamespace {
			a.hub.roomJoined(s.Namespace().Name(), room, s.ID())
		}
	}
	h.Left = func(s *sioengine.Socket, room string) {
		if s.Namespace().Name() != adminNamespace {
			a.hub.roomLeft(s.Namespace().Name(), room, s.ID())
		}
	}
	n.b.received = func(s *sioengine.Socket, name string, args nativeArgs) {
		if a.hub.watching() && a.hub.room() {
			a.hub.eventReceived(s.Namespace().Name(), s.ID(), nativeEventJSON(name, args.vals))
		}
	}
	n.b.sent = func(s *sioengine.Socket, name string, args nativeArgs) {
		if a.hub.watching() && a.hub.room() {
			a.hub.eventSent(s.Namespace().Name(), s.ID(), nativeEventJSON(name, args.vals))
		}
	}
}

// nativeEventJSON is an event as instrument shows it: [name, ...args],
// the arguments as the client wrote them (a binary one as its
// placeholder).
func nativeEventJSON(name string, vals []json.RawMessage) json.RawMessage {
	b := append([]byte{'['}, mustJSON(name)...)
	for _, v := range vals {
		b = append(append(b, ','), v...)
	}
	return append(b, ']')
}

func (a *nativeAdmin) serialize(s *sioengine.Socket) adminSocket {
	c := s.Conn()
	out := adminSocket{ID: s.ID(), ClientID: clientID(c.ID()), Transport: c.Transport(), Nsp: s.Namespace().Name(), Rooms: s.Rooms()}
	if hs := c.Data.(*nativeSession).handshake; hs != nil {
		out.Handshake = newAdminHandshake(hs.remote, hs.header, hs.url, hs.issued, hs.secure)
	}
	return out
}

// The adminEngine methods.

func (a *nativeAdmin) emitAdmin(s *sioengine.Socket, event string, args []json.RawMessage) {
	s.Emit(event, args, nil)
}

func (a *nativeAdmin) backlog(s *sioengine.Socket) int { return s.Conn().Unwritten() }

func (a *nativeAdmin) clients() (all, polling int) {
	a.n.eng.Conns(func(c *sioengine.Conn) {
		sess, ok := c.Data.(*nativeSession)
		if !ok || sess.kind.admin() {
			return
		}
		all++
		if c.Transport() == sioengine.Polling {
			polling++
		}
	})
	return all, polling
}

func (a *nativeAdmin) namespaces() []adminNamespaceStats {
	out := []adminNamespaceStats{}
	for _, nsp := range a.n.eng.Namespaces() {
		if nsp.Name() != adminNamespace {
			out = append(out, adminNamespaceStats{Name: nsp.Name(), SocketsCount: nsp.Len()})
		}
	}
	return sortNamespaces(out)
}

func (a *nativeAdmin) sockets(max int) []adminSocket {
	var out []adminSocket
	for _, nsp := range a.n.eng.Namespaces() {
		if nsp.Name() == adminNamespace {
			continue
		}
		for _, s := range nsp.Select(nil, nil) {
			if len(out) >= max {
				return out
			}
			out = append(out, a.serialize(s))
		}
	}
	return out
}

// selected are the sockets of a user namespace in room filter ("": every
// one).
func (a *nativeAdmin) selected(name, filter string) []*sioengine.Socket {
	nsp, rooms := a.target(name, filter)
	if nsp == nil {
		return nil
	}
	return nsp.Select(rooms, nil)
}

// target is the user namespace an order names (nil for /admin or one the
// server does not have) and the rooms of its filter ("": none, every
// socket).
func (a *nativeAdmin) target(name, filter string) (*sioengine.Namespace, []string) {
	nsp := a.n.eng.Namespace(name)
	if nsp == nil || name == adminNamespace {
		return nil, nil
	}
	if filter == "" {
		return nsp, nil
	}
	return nsp, []string{filter}
}

// disconnect: with close, the socket's whole session, its other sockets
// told first, as Node's socket.disconnect(true).
func (a *nativeAdmin) disconnect(nsp, filter string, close bool) {
	for _, s := range a.selected(nsp, filter) {
		if close {
			s.Conn().DisconnectSockets()
			s.Conn().Close()
		} else {
			s.Disconnect()
		}
	}
}

func (a *nativeAdmin) join(nsp, filter, room string) {
	for _, s := range a.selected(nsp, filter) {
		s.Join(room)
	}
}

func (a *nativeAdmin) leave(nsp, filter, room string) {
	for _, s := range a.selected(nsp, filter) {
		s.Leave(room)
	}
}

func (a *nativeAdmin) emitTo(name, filter, event string, args []json.RawMessage) int {
	nsp, rooms := a.target(name, filter)
	if nsp == nil {
		return 0
	}
	return nsp.BroadcastTo(rooms, nil, event, args, nil)
}

func (a *nativeAdmin) close() {
	if a != nil {
		a.hub.close()
	}
}

package socketio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
	"github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/servers/socket/v3"
)

// zishangAdmin serves the Admin UI (adminui.go) on the zishang520
// engine: the library's namespace, adapter and engine events feed it.
type zishangAdmin struct {
	s   *Server
	hub *adminHub[*socket.Socket]

	mu   sync.Mutex
	nsps map[string]socket.Namespace // the user namespaces, by name
}

// instrument makes /admin and follows every user namespace, those made
// later included; it comes before the target's own namespaces are made.
func (s *Server) instrument() {
	a := &zishangAdmin{s: s, nsps: map[string]socket.Namespace{}}
	a.hub = newAdminHub[*socket.Socket](a, s.m)
	s.admin = a
	s.io.On("new_namespace", func(args ...any) {
		if nsp, ok := args[0].(socket.Namespace); ok {
			a.follow(nsp)
		}
	})
	a.follow(s.io.Sockets())
	s.io.Of(adminNamespace, nil).On("connection", func(args ...any) { a.adminConnected(args[0].(*socket.Socket)) })
	s.b.received = func(sock *socket.Socket, name string, args []any) {
		if a.hub.watching() && a.hub.room() {
			a.hub.eventReceived(sock.Nsp().Name(), string(sock.Id()), eventJSON(name, args))
		}
	}
	s.b.sent = func(sock *socket.Socket, name string, args []any) {
		if a.hub.watching() && a.hub.room() {
			a.hub.eventSent(sock.Nsp().Name(), string(sock.Id()), eventJSON(name, args))
		}
	}
}

// follow takes a user namespace: its rooms' joins and leaves, from its
// adapter (a socket joins its own room as it connects, and leaves every
// room as it disconnects, as in Node).
func (a *zishangAdmin) follow(nsp socket.Namespace) {
	name := nsp.Name()
	if name == adminNamespace {
		return
	}
	a.mu.Lock()
	a.nsps[name] = nsp
	a.mu.Unlock()
	nsp.Adapter().On("join-room", func(args ...any) {
		if len(args) == 2 {
			a.hub.roomJoined(name, fmt.Sprint(args[0]), fmt.Sprint(args[1]))
		}
	})
	nsp.Adapter().On("leave-room", func(args ...any) {
		if len(args) == 2 {
			a.hub.roomLeft(name, fmt.Sprint(args[0]), fmt.Sprint(args[1]))
		}
	})
}

// adminConnected takes an Admin UI's socket and its orders.
func (a *zishangAdmin) adminConnected(sock *socket.Socket) {
	if v, ok := a.s.sessions.Load(sock.Conn().Id()); ok {
		v.(*session).addSocket(sock) // told at shutdown, as the others are
	}
	_ = sock.On("disconnect", func(...any) { a.hub.adminLeft(sock) })
	for _, event := range []string{"_disconnect", "join", "leave", "emit"} {
		_ = sock.On(event, func(args ...any) {
			args, _ = splitAck(args)
			raw := make([]json.RawMessage, len(args))
			for i, v := range args {
				raw[i], _ = json.Marshal(v)
			}
			a.hub.order(event, raw)
		})
	}
	a.hub.adminConnected(sock)
}

// socketConnected: a user socket's CONNECT ack is written.
func (a *zishangAdmin) socketConnected(sock *socket.Socket) {
	nsp, id := sock.Nsp().Name(), string(sock.Id())
	_ = sock.On("disconnect", func(args ...any) {
		reason, _ := args[0].(string)
		a.hub.socketDisconnected(nsp, id, reason)
	})
	if a.hub.watching() && a.hub.room() {
		a.hub.socketConnected(a.serialize(sock))
	}
}

// upgraded: a session went from polling to WebSocket.
func (a *zishangAdmin) upgraded(sess *session) {
	if !a.hub.watching() {
		return
	}
	for _, sock := range sess.namespaceSockets() {
		if sock.Nsp().Name() != adminNamespace {
			a.hub.socketUpdated(sock.Nsp().Name(), string(sock.Id()), "websocket")
		}
	}
}

func (a *zishangAdmin) serialize(sock *socket.Socket) adminSocket {
	hs := sock.Handshake()
	out := adminSocket{
		ID: string(sock.Id()), ClientID: clientID(string(sock.Conn().Id())),
		Transport: sock.Conn().Transport().Name(), Nsp: sock.Nsp().Name(),
		Handshake: newAdminHandshake(hs.Address, hs.Headers.Header(), hs.Url, time.UnixMilli(hs.Issued), hs.Secure),
		Rooms:     []string{string(sock.Id())},
	}
	rooms := sock.Rooms().Keys()
	slices.Sort(rooms)
	for _, r := range rooms {
		if string(r) != out.ID {
			out.Rooms = append(out.Rooms, string(r))
		}
	}
	return out
}

// The adminEngine methods.

func (a *zishangAdmin) emitAdmin(sock *socket.Socket, event string, args []json.RawMessage) {
	_ = sock.Emit(event, rawArgs(args)...)
}

func (a *zishangAdmin) backlog(sock *socket.Socket) int {
	if v, ok := a.s.sessions.Load(sock.Conn().Id()); ok {
		return int(v.(*session).queued.Load())
	}
	return 0
}

func (a *zishangAdmin) clients() (all, polling int) {
	a.s.sessions.Range(func(_, v any) bool {
		sess := v.(*session)
		if sess.kind.admin() {
			return true
		}
		all++
		if t := sess.conn.Transport(); t != nil && t.Name() == "polling" {
			polling++
		}
		return true
	})
	return all, polling
}

func (a *zishangAdmin) namespaces() []adminNamespaceStats {
	out := []adminNamespaceStats{}
	for _, nsp := range a.userNamespaces() {
		out = append(out, adminNamespaceStats{Name: nsp.Name(), SocketsCount: nsp.Sockets().Len()})
	}
	return sortNamespaces(out)
}

func (a *zishangAdmin) userNamespaces() []socket.Namespace {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Collect(maps.Values(a.nsps))
}

func (a *zishangAdmin) sockets(max int) []adminSocket {
	var out []adminSocket
	for _, nsp := range a.userNamespaces() {
		nsp.Sockets().Range(func(_ socket.SocketId, sock *socket.Socket) bool {
			if len(out) >= max {
				return false
			}
			out = append(out, a.serialize(sock))
			return true
		})
	}
	return out
}

// to is the namespace's sockets on this replica, in room filter ("": every
// one); nil for a namespace the target does not have.
func (a *zishangAdmin) to(name, filter string) *socket.BroadcastOperator {
	a.mu.Lock()
	nsp := a.nsps[name]
	a.mu.Unlock()
	if nsp == nil {
		return nil
	}
	op := nsp.Local()
	if filter != "" {
		op = op.In(socket.Room(filter))
	}
	return op
}

func (a *zishangAdmin) disconnect(nsp, filter string, close bool) {
	if op := a.to(nsp, filter); op != nil {
		op.DisconnectSockets(close)
	}
}

func (a *zishangAdmin) join(nsp, filter, room string) {
	if op := a.to(nsp, filter); op != nil {
		op.SocketsJoin(socket.Room(room))
	}
}

func (a *zishangAdmin) leave(nsp, filter, room string) {
	if op := a.to(nsp, filter); op != nil {
		op.SocketsLeave(socket.Room(room))
	}
}

func (a *zishangAdmin) emitTo(name, filter, event string, args []json.RawMessage) int {
	a.mu.Lock()
	nsp := a.nsps[name]
	a.mu.Unlock()
	if nsp == nil {
		return 0
	}
	return emitTo(nsp, true, filter, event, rawArgs(args))
}

// rawArgs are JSON arguments as the library emits them: as they are.
func rawArgs(args []json.RawMessage) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// eventJSON is an event as instrument shows it, [name, ...args], with
// each binary argument as the placeholder a Socket.IO packet carries for
// it ({"_placeholder":true,"num":N}): its bytes are not copied.
func eventJSON(name string, args []any) json.RawMessage {
	n := 0
	all := make([]any, 0, 1+len(args))
	all = append(all, name)
	for _, v := range args {
		r, _ := placeholders(v, &n)
		all = append(all, r)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(all); err != nil {
		return mustJSON([]string{name}) // a value JSON cannot carry
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// placeholders is v with its binary values replaced by placeholders,
// numbered from *n; a slice or map is copied only when one was in it
// (changed).
func placeholders(v any, n *int) (r any, changed bool) {
	switch t := v.(type) {
	case []any:
		var out []any
		for i, e := range t {
			if r, changed := placeholders(e, n); changed {
				if out == nil {
					out = slices.Clone(t)
				}
				out[i] = r
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case map[string]any:
		var out map[string]any
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if r, changed := placeholders(t[k], n); changed {
				if out == nil {
					out = maps.Clone(t)
				}
				out[k] = r
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	if parser.IsBinary(v) {
		p := map[string]any{"_placeholder": true, "num": *n}
		*n++
		return p, true
	}
	return v, false
}

// The engine's side, for every session (server.go); each does nothing
// without -admin-ui (a nil *zishangAdmin).

// opened counts a session's open and follows its upgrade.
func (a *zishangAdmin) opened(conn engine.Socket, sess *session) {
	if a == nil {
		return
	}
	a.hub.counts.opened()
	if conn.Protocol() == 3 {
		sess.kind.legacy()
	}
	_ = conn.On("upgrade", func(...any) { a.upgraded(sess) })
}

// packetIn sees a message packet a session received (data, text: see
// messageData); true for the Admin UI's session, whose packets the
// target does not count: its first CONNECT naming /admin makes it so.
func (a *zishangAdmin) packetIn(sess *session, data []byte, text bool) bool {
	if a == nil {
		return false
	}
	if text && len(data) > 0 && data[0] == socketIOConnect && sess.kind.firstConnect(connectNamespace(data)) {
		// Its handshake is not counted: settled without a result.
		sess.settled.Store(true)
		a.hub.sessions.Add(1)
		a.hub.counts.adminSession()
		a.s.m.AdminUISession(sess.transport)
	}
	if sess.kind.admin() {
		return true
	}
	a.hub.counts.in(len(data))
	return false
}

// packetOut sees a message packet made for a session; true for the
// Admin UI's.
func (a *zishangAdmin) packetOut(sess *session, data []byte) bool {
	if a == nil {
		return false
	}
	if sess.kind.admin() {
		return true
	}
	a.hub.counts.out(len(data))
	return false
}

// closed sees a session close; true for the Admin UI's, which the
// target's figures leave out.
func (a *zishangAdmin) closed(sess *session, reason string) bool {
	if a == nil {
		return false
	}
	if sess.kind.close() {
		a.hub.sessions.Add(-1)
		return true
	}
	a.hub.counts.closed(reason)
	return false
}

func (a *zishangAdmin) close() {
	if a != nil {
		a.hub.close()
	}
}

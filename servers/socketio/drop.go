package socketio

import (
	"maps"
	"slices"

	"github.com/zishang520/socket.io/servers/socket/v3"

	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/servers/sioengine"
	"github.com/knowngood/knowngood/shared/faults"
)

// Faults is the injector of the known-bad modes (control.Faulter): the
// admin listener's POST /control/fault switches them. One per target,
// whatever the engine: the behaviour, the open admission and the polling
// front all ask it.
func (s *Server) Faults() *faults.Injector {
	if s.native != nil {
		return s.native.faults
	}
	return s.faults
}

// Drop closes a random fraction of the Engine.IO sessions open now, or
// with how.Disconnect sends each of their sockets a Socket.IO DISCONNECT
// instead: the admin listener's POST /control/drop.
func (s *Server) Drop(fraction float64, how control.How) (int, int) {
	if s.native != nil {
		return s.native.drop(fraction, how)
	}
	var open []*session
	s.sessions.Range(func(_, v any) bool {
		if sess := v.(*session); !sess.kind.admin() { // the Admin UI is not a client
			open = append(open, sess)
		}
		return true
	})
	picked := control.Pick(len(open), fraction)
	for _, i := range picked {
		sess := open[i]
		if !how.Disconnect {
			sess.conn.Close(false) // what is queued goes first
			continue
		}
		for _, sock := range sess.namespaceSockets() {
			sock.Disconnect(false)
		}
	}
	return len(picked), len(open)
}

func (n *native) drop(fraction float64, how control.How) (int, int) {
	var open []*sioengine.Conn
	n.eng.Conns(func(c *sioengine.Conn) {
		if sess, ok := c.Data.(*nativeSession); !ok || !sess.kind.admin() { // the Admin UI is not a client
			open = append(open, c)
		}
	})
	picked := control.Pick(len(open), fraction)
	for _, i := range picked {
		if how.Disconnect {
			open[i].DisconnectSockets()
		} else {
			open[i].Close()
		}
	}
	return len(picked), len(open)
}

// addSocket keeps sock as the session's socket of its namespace.
func (sess *session) addSocket(sock *socket.Socket) {
	sess.socketsMu.Lock()
	defer sess.socketsMu.Unlock()
	if sess.sockets == nil {
		sess.sockets = map[string]*socket.Socket{}
	}
	sess.sockets[sock.Nsp().Name()] = sock
}

// namespaceSockets are the session's sockets, one per namespace it joined.
func (sess *session) namespaceSockets() []*socket.Socket {
	sess.socketsMu.Lock()
	defer sess.socketsMu.Unlock()
	return slices.Collect(maps.Values(sess.sockets))
}

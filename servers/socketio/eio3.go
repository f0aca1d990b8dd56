package socketio

import (
	"log/slog"
	"net/http"
	"slices"

	"github.com/gorilla/websocket"
	"github.com/zishang520/socket.io/parsers/engine/v3/packet"
	"github.com/zishang520/socket.io/parsers/engine/v3/parser"
	"github.com/zishang520/socket.io/servers/engine/v3/transports"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/knowngood/knowngood/shared/protocol"
)

// Engine.IO v3 / Socket.IO v2 clients (socket.io-client 2, artillery's
// older Socket.IO engine) are served with -allow-eio3: the engine speaks
// v3's payload encoding, answers the client's pings, and joins each v3
// session to "/" at its open, since a v2 client sends no CONNECT for it.
// Without the flag, their open request is refused as Node's engine.io
// refuses it.

// unsupportedProtocol is Node's engine.io answer to an Engine.IO v3 open
// request when v3 is not allowed (code 5, UNSUPPORTED_PROTOCOL_VERSION).
// The library's own answer says code 4, Forbidden's code.
const unsupportedProtocol = `{"code":5,"message":"Unsupported protocol version"}`

// refusesEIO3 reports whether an open request (no sid) speaks Engine.IO v3
// without -allow-eio3: any EIO but 4 is v3, as in Node. The checks Node
// makes first (the transport, GET, a WebSocket upgrade, the origin) keep
// the engine's answers.
func (s *Server) refusesEIO3(r *http.Request, transport string) bool {
	switch {
	case s.cfg.AllowEIO3 || r.URL.Query().Get("EIO") == "4":
		return false
	case transport == "invalid" || r.Method != http.MethodGet:
		return false
	case transport == transports.WEBSOCKET && !websocket.IsWebSocketUpgrade(r):
		return false
	}
	return s.originAllowed(r.Header.Get("Origin"))
}

// refuseEIO3 answers a refused v3 open request 400 with Node's body, over
// either transport, before any upgrade, and counts a failed handshake.
// Node's engine.io completes a WebSocket upgrade and then writes its 400
// onto the socket, which a client's WebSocket library reports as a broken
// frame; the library closes the WebSocket after its 101, which
// socket.io-client 2 takes for a close while opening and waits on without
// an error. An HTTP 400 before the upgrade gives every client a prompt
// connect error that names the status. The first refusal is logged, once:
// it names the flag.
func (s *Server) refuseEIO3(w http.ResponseWriter, r *http.Request, transport string) {
	s.m.Handshake(protocol.ResultFailed, transport, 0)
	s.eio3Refused.Do(func() { logEIO3Refused(s.log, r) })
	// The CORS headers the engine gives its own answers, so that a
	// browser's client can read this one.
	if origin := r.Header.Get("Origin"); origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Add("Vary", "Origin")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(unsupportedProtocol))
}

// hasClosePacketV3 is hasClosePacket for an Engine.IO v3 payload
// (-allow-eio3): length-prefixed packets ("1:1" is a close), as text or,
// with Content-Type application/octet-stream, as v3's binary payload. A
// first-byte test would take every payload whose first length starts with 1
// for a close; the engine's own v3 decoder reads it as the engine will.
func hasClosePacketV3(payload []byte, binary bool) bool {
	var data types.BufferInterface = types.NewStringBuffer(payload)
	if binary {
		data = types.NewBytesBuffer(payload)
	}
	packets, _ := parser.Parserv3().DecodePayload(data)
	return slices.ContainsFunc(packets, func(p *packet.Packet) bool { return p.Type == packet.CLOSE })
}

// prependListener puts fn ahead of the listeners already on event. The
// Socket.IO server listens on the engine's "connection" from ServeHandler
// on, and onEngineOpen must run first: for a v3 session, the server's
// listener starts the connect to "/" at once, on a goroutine of the
// socket's, whose CONNECT ack could otherwise be written before the session
// is known here, and the handshake would never be counted ok.
func prependListener(e types.EventEmitter, event types.EventName, fn types.EventListener) {
	rest := e.Listeners(event)
	e.RemoveAllListeners(event)
	_ = e.On(event, fn)
	_ = e.On(event, rest...)
}

// logEIO3Refused logs a refused Engine.IO v3 client, naming the flag.
func logEIO3Refused(log *slog.Logger, r *http.Request) {
	log.Warn("refused an Engine.IO v3 (Socket.IO v2) client; -allow-eio3 accepts them",
		"remote", r.RemoteAddr, "user_agent", r.UserAgent())
}

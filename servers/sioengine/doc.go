// Package sioengine is an Engine.IO v4 / Socket.IO v5 server (with
// Options.AllowEIO3, for Engine.IO v3 / Socket.IO v2 clients too) written for
// the knowngood targets (-engine native): HTTP long-polling, WebSocket and
// the upgrade between them; namespaces, rooms, acks, binary events and
// acks with attachments. It answers as Node's engine.io 6 / socket.io 4 do,
// racing requests included, and is checked against the same tests as the
// zishang520 targets (servers/socketio) and against the official clients.
//
// # Transport
//
// Two transports carry the sessions. The default rides net/http, with
// gorilla/websocket for the WebSocket transport: long-polling needs an
// HTTP server anyway, and the upgrade from polling arrives as an HTTP
// request of the same server, so one net/http server serves both (the
// Server is an http.Handler for /socket.io/). Each WebSocket session
// holds one reading goroutine and gorilla's read buffer.
//
// The other (gnet.go) rides the event loops of wsserver's gnet engine:
// the Server is its Front (wsserver.Options.Front), each request is
// served on its connection's loop through the same ServeHTTP, and a
// WebSocket session lives on that loop: wsserver reads its frames
// (checking size, UTF-8 and the framing rules), and what it sends is
// handed to the loop's flusher as it is queued. An idle session holds no
// goroutine and no buffer: the knowngood targets measured about 3.4 KiB
// of RSS per held Socket.IO socket on it at 18,000 where net/http takes
// about 14 KiB (servers/README.md says how). It serves WebSocket sessions
// only (transport=websocket from the start, as load tools connect): the
// loops have no HTTP/1.1 server for long-polls, so a polling request gets
// Engine.IO's answer for a transport the server does not offer (400,
// {"code":0,"message":"Transport unknown"}), and every answer that is not
// an upgrade ends its connection (no keep-alive). net/http stays the
// default for that reason: a client that starts with polling, as
// socket.io-client does by default, needs it. The heartbeat and connect
// timers are the loop's: a timing wheel per loop, ticks run on it (timers.go).
//
// # Writes
//
// Each session has one queue of frames and at most one writer of it. On
// net/http that is a goroutine, started when a frame is queued and ended
// when the queue is empty (an idle session holds no writer, and gorilla's
// write buffer goes back to a pool between writes), or the long-poll GET
// that takes the queue. On gnet, where a write never blocks (it is handed
// to the connection's loop, which writes every connection handed to it
// with one task per loop and one writev per connection), the frames are
// handed over as they are queued, under the session's lock, so they keep
// their order; only a closing session's last writes run as a task of its
// loop. A broadcast encodes its packet once: the same frames (and, on
// WebSocket, the same framed bytes: gorilla's prepared message, or on
// gnet one wire frame handed to every loop as is) go to every member, in
// order with each session's other writes. Unicast packets are encoded
// into pooled buffers, given back once written (on gnet, once framed).
//
// # Bounds
//
// Everything a client can make the server hold is bounded: a packet and a
// POST body by MaxPayload (1009 / 413), the attachments of a packet by
// MaxAttachments, the frames queued for a client that does not read
// (maxQueued; on gnet, wsserver's bound on what a loop holds for a
// connection, then 1008; either way the session ends with "transport
// error"), the rooms of a socket (maxRooms), the CONNECTs waiting in the
// middleware (maxPendingConnects), an upgrade that never completes (upgradeTimeout),
// a session that joins no namespace (ConnectTimeout) or stops answering
// pings (PingInterval + PingTimeout). Length arithmetic on client input is
// overflow-safe.
//
// # Engine.IO v3
//
// The version is decided in one place, the open request's EIO check in
// ServeHTTP: every EIO but 4 is v3, as in Node, and is refused (400
// "Unsupported protocol version") unless Options.AllowEIO3. A v3 session
// differs in three places, each behind the session's version: the polling
// payload codec (eio.go: "<length>:<packet>" records, the length in UTF-16
// code units as JavaScript counts it, and "b4"-prefixed base64 instead of
// 0x1e-separated packets; v3's binary payloads, which a client sends only
// when it has not asked for base64, are refused), the heartbeat (conn.go:
// the client pings and the server answers with a pong; the session ends
// pingInterval + pingTimeout after the last ping), and the Socket.IO v2
// greeting (socket.go: the server joins "/" at the open, through the
// middleware, and sends "40" unasked; a CONNECT ack carries no sid; other
// namespaces are joined by the client's "40/custom," with its query as the
// auth, and answered "40/custom,"; a middleware's refusal is the bare
// message). Over WebSocket, on either transport, nothing else differs.
package sioengine

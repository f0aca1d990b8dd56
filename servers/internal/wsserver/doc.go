// Package wsserver is the WebSocket server layer: it serves WebSocket
// connections on three libraries (gorilla/websocket, coder/websocket, and
// gnet with gobwas/ws framing) with one behaviour, so that a target built
// on it (the echo and broadcast variants) differs only in what it does with
// each message.
//
// # What the layer does
//
// Every connection gets the same treatment, whatever the library:
//
//   - Upgrade checks (upgrade.go): the upgrade on any path; 426 for a
//     request that is not an upgrade, 405 for a method other than GET, 400
//     for a bad Connection header or Sec-WebSocket-Key, 426 with
//     Sec-WebSocket-Version: 13 for another version, 403 for an Origin not
//     in -origin, 503 while shutting down and over -max-conns.
//   - Framing: fragmented messages reassembled; a frame the rules forbid
//     closed with 1002 (the frame guard, frameguard.go, checks headers in
//     front of gorilla and coder); a message over -max-message closed with
//     1009, sizes after inflate included (deflate.go); invalid UTF-8 text
//     closed with 1007 (gorilla and coder do not check it).
//   - Close codes: the client's close answered with its own code; 1001 on
//     Shutdown; 1008 for a client that does not read its queue; the
//     disconnect reason counted as the close code (1006 without one).
//   - Send queues (queue.go): with Options.Queue > 0 each connection has
//     one writer behind a bounded queue, so that a client that does not read
//     holds up only itself.
//   - Accounting: handshakes, messages, bytes and disconnects counted in
//     shared/metrics; the known-bad modes of shared/faults applied.
//
// One adapter per library: gorilla.go and coder.go sit on net/http
// (httpfront.go and trackedconn.go do the rest for both, queue.go is their
// one writer), and the gnet files run gnet's event loops on the frame codec
// of package wsframe: gnet.go (the engine and its callbacks), gnetconn.go,
// gnethandshake.go, gnetframe.go, gnetqueue.go and gnettls.go. NewGorilla,
// NewCoder and NewGnet build a lifecycle.Target on each.
//
// # Plugging in a behaviour
//
// A Handler gives each connection its Session: Open is called once the
// connection is upgraded, before the client can read its 101. The Session
// gets every whole message that passed the checks, then Closed once. Embed
// NopSession to write only the hooks a target needs.
//
// Two ways to write, and a handler uses one of them: Peer.Reply from within
// Session.Message (the reader writes: echo), or Peer.Enqueue from anywhere,
// with one writer per connection behind a bounded queue (broadcast,
// Options.Queue > 0). Peer.Close starts the server's close with a code.
//
// On gnet, Open, Message and Closed run on the connection's event loop:
// none of them may block.
//
// # An application protocol in front (gnet)
//
// With Options.Front, a gnet target serves every request with that
// http.Handler, on the loop, instead of the upgrade checks alone
// (gnetfront.go): an answer it writes ends the connection, and its
// UpgradeOnLoop (the ResponseWriter is a LoopUpgrader) runs the usual
// checks and opens the connection with a Session. Its LoopPeer takes
// whole frames the application made, from any goroutine (WriteFrames),
// and runs work on the loop (Execute). That is how the native Socket.IO
// engine (servers/sioengine) decides on an Engine.IO request before its
// upgrade, with its own heartbeat (Options.NoKeepalive) and its own
// accounting: the layer then counts only, through Options.Unserved, the
// requests that never reached Front.
package wsserver

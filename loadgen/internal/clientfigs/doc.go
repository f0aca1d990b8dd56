// Package clientfigs reads a load tool's own figures from its own output,
// for loadgen watch to set beside the server's /stats: connections
// (handshakes) attempted and done, messages sent and received, each
// unknown (-1) when the tool does not count it. Prepare recognises the
// tool from its command line (adding a report file when k6 or artillery
// would write none); Plan.Read reads the figures once it has exited.
//
// Which figure is which server counter ("Socket.IO" targets: empty, async,
// blocking; "WebSocket": echo-*, broadcast-*):
//
//	tool (source)                 attempts              ok                        sent                          received
//	k6 (k6 summary),              knowngood_attempts    knowngood_ok              knowngood_sent                knowngood_received
//	  recipes and any script      (handshakes tried)    (101 / CONNECT acked)     (events / messages)           (acks / echoes)
//	  with these Counters
//	k6, another script            ws_sessions (a        unknown                   ws_msgs_sent (WebSocket       ws_msgs_received (same)
//	                              refused dial too)                               targets only: frames)
//	artillery (artillery report)  vusers.created        vusers.created when       websocket.messages_sent,      websocket.messages_received;
//	                                                    vusers.failed is 0,       socketio.emit                 unknown for socketio
//	                                                    else unknown
//	sio-connect.mjs,              attempts              connected                 sent (echo events emitted)    received (acks back)
//	sio_connect.py,
//	sio-connect-go (JSON line)
//	tsung (tsung log)             websocket_succ +      websocket_succ            match + nomatch, for the      the same
//	                              websocket_fail +      (connect without          recipe (scripts/tsung) only;
//	                              error_connect_*       WebSocket)                else unknown
//	websocket-bench (output)      last clients: + step  the same                  (lines + 1) x sample size     echo: the same;
//	                              size (exit 0 only)                                                            broadcast: unknown
//	locust (its last statistics   "connect" requests    connect requests less     other requests of type        the same less their
//	  table; else --csv stats),   of type socketio      their failures            socketio (events emitted)     failures (acks back)
//	  scripts/locust/locustfile.py
//	any tool (-client-json)       attempts              ok                        sent                          received
//
// On the server's side: attempts against the handshakes it saw (ok,
// rejected, failed, abandoned), ok against its ok handshakes, sent against
// messages_received, received against messages_sent (for Socket.IO,
// events and acks, not Engine.IO packets).
//
// websocket-bench (hashrocket/websocket-shootout) prints a line per step
// that stayed under its round-trip limit; the step that went over ends
// the run without a line, so its clients are the last line's plus
// --step-size, and every step sent --sample-size echoes. Its parser is
// tested on lines made with the format of its source's print statement:
// the tool itself is not installable here.
package clientfigs

package socketio

import (
	"time"

	"github.com/knowngood/knowngood/servers/internal/adminui"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
)

// Options are what the Socket.IO targets obey; servers/internal/settings
// maps the flags onto them.
type Options struct {
	Name string // the variant, in answers and logs
	// Engine is the Engine.IO / Socket.IO server the target runs on:
	// config.EngineZishang520, config.EngineNative (servers/sioengine on
	// net/http) or config.EngineNativeGnet (the same on gnet's loops).
	Engine string

	Delay         time.Duration // -delay: each connect's wait (async, blocking)
	BlockingModel string        // -blocking-model: config.BlockingAsyncio or config.BlockingNode

	Transports     []string      // -transports
	MaxPayload     int64         // -max-payload: the largest HTTP body or WebSocket message
	ConnectTimeout time.Duration // -connect-timeout: an open with no namespace CONNECT is closed
	EmitAuth       bool          // -emit-auth: echo a CONNECT's auth back as an auth event
	AckDelay       time.Duration // -ack-delay: the ack of an event of any other name waits this long
	AllowEIO3      bool          // -allow-eio3: Engine.IO v3 / Socket.IO v2 clients too
	// Recovery is the connection state recovery window (-recovery; 0 =
	// off): a socket that may come back is kept this long.
	Recovery time.Duration
	// Path is where Socket.IO is served, with its trailing slash (-path).
	Path string
	// Namespaces restricts the namespaces a client may join to "/" and
	// these (-namespaces); nil lets it join any, up to config.MaxNamespaces.
	Namespaces []string

	// The timed push: off when PushInterval is 0.
	PushInterval time.Duration // -push-interval
	PushSize     int           // -push-size: payload bytes
	PushEvent    string        // -push-event
	PushRooms    int           // -push-rooms: 0 = every socket

	Origins      []string      // -origin: the Origin values allowed (empty = any)
	MaxConns     int           // -max-conns: sessions over it are refused (0 = no cap)
	Compression  bool          // -compression: permessage-deflate on WebSocket
	PingInterval time.Duration // -ping-interval: Engine.IO's heartbeat
	PingTimeout  time.Duration // -ping-timeout
	Loops        int           // -loops: gnet's event loops (-engine native-gnet)
	Redis        string        // -redis: the cluster's Redis URLs, comma-separated
	Faults       faults.Modes  // -fault-*: in force at start; Server.Faults switches them
	HTTP         lifecycle.HTTPLimits
	// AdminUI, when not nil (-admin-ui), serves the Socket.IO Admin UI's
	// /admin namespace (adminui.go) and answers the admin listener's
	// origin cross-origin; the admin listener serves the page with it.
	AdminUI *adminui.Link
}

// Native reports whether the target runs on this project's own engine,
// on either library.
func (o Options) Native() bool {
	return o.Engine == config.EngineNative || o.Engine == config.EngineNativeGnet
}

package protocol

// About is what a target says of itself on /health, beside its variant's
// name, so that a client can tell how to read its counts without a list
// of variant names of its own: what a client speaks to it ("socket.io",
// "websocket" or "tcp"), its family ("socketio", "echo", "broadcast"),
// and how a Socket.IO one answers a connect ("at-once", "own-timer",
// "shared-loop"; empty outside that family). A target that predates
// these fields leaves them empty, and the client then goes by the name.
type About struct {
	Protocol string `json:"protocol,omitempty"`
	Family   string `json:"family,omitempty"`
	Connect  string `json:"connect,omitempty"`
}

// The About values a client checks for.
const (
	ProtocolSocketIO  = "socket.io"
	ProtocolTCP       = "tcp"
	ConnectSharedLoop = "shared-loop"
)

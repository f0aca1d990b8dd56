package protocol

import "time"

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

// The blocking variant's write models, as /health's config shows them
// under "blocking-model": when an answer leaves its frozen loop.
const (
	BlockingAsyncio = "asyncio" // once the turns queued with it have ended: a burst's acks leave together
	BlockingNode    = "node"    // in the handler's own turn: the k-th of N at about k x delay
)

// BlockingSuccess is the share of n connects sent at once to a blocking
// target (each connect holding its loop for delay) that complete within
// a deadline counted from their start, under the target's model:
//   - node: min(1, deadline / (n x delay)), the k-th completing at k x delay;
//   - asyncio: 1 when the whole burst fits in the deadline, else 0, as
//     every ack leaves after the burst's last handler (in practice a few
//     connects that finished before the burst filled the loop succeed).
//
// A client whose wait starts at the Engine.IO open instead (python-socketio's
// wait_timeout) does worse on both: the opens wait in the same loop.
func BlockingSuccess(model string, n int, delay, deadline time.Duration) float64 {
	need := time.Duration(n) * delay
	if need <= deadline || n <= 0 {
		return 1
	}
	if model == BlockingAsyncio {
		return 0
	}
	return float64(deadline) / float64(need)
}

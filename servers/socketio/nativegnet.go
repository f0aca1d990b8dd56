package socketio

import (
	"net/http"
	"slices"

	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// onLoops serves the native engine on gnet's event loops
// (-engine native-gnet): the same handler as on net/http (admission, the
// handshake clock, the engine) serves each request on its connection's
// loop, and a WebSocket session stays there. The WebSocket layer counts
// nothing of its own (nil metrics): the engine's hooks count sessions,
// handshakes, messages and bytes as on net/http, and the layer's
// -max-conns, -origin and known-bad modes are off, the target applies its
// own; a connection it refuses once accepted is counted with the target's.
func (n *native) onLoops(front http.Handler) (*Server, error) {
	cfg := n.cfg
	layer := wsserver.Settings{
		Name: cfg.Name, MaxMessage: cfg.MaxPayload, Compression: cfg.Compression,
		PingInterval: cfg.PingInterval, PingTimeout: cfg.PingTimeout, Loops: cfg.Loops,
		HTTP: cfg.HTTP,
	}
	loops, err := wsserver.NewGnet(layer, nil, n.log, wsserver.Options{
		Front: front, NoKeepalive: true,
		// As on net/http (headers.go): a request that never reached a
		// handler is a handshake that failed, transport unknown.
		Unserved: func(timedOut bool) {
			if timedOut {
				n.m.Timeout(metrics.ListenerTarget, metrics.StageHeader)
			}
			n.m.Handshake(protocol.ResultFailed, "unknown", 0)
		},
		AcceptError: n.m.AcceptError,
	})
	if err != nil {
		return nil, err
	}
	n.loops = loops
	return &Server{native: n}, nil
}

// engineTransports are the transports the engine offers: on gnet,
// WebSocket only, so that a polling request gets Engine.IO's answer for
// a transport it does not offer (400, code 0 "Transport unknown").
func engineTransports(cfg Options) []string {
	if cfg.Engine == config.EngineNativeGnet {
		return slices.DeleteFunc(slices.Clone(cfg.Transports), func(t string) bool { return t != "websocket" })
	}
	return cfg.Transports
}

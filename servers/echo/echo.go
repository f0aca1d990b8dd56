// Package echo is the WebSocket echo target on each WebSocket library of
// the registry (variants echo-gorilla, echo-coder, echo-gnet, echo-nbio)
// and the raw TCP echo that they are measured against (echo-tcp).
//
// The WebSocket serving itself, the same on every library, is
// servers/internal/wsserver's: the upgrade on any path, 426/400/403/503 refusals,
// reassembly, 1009 over -max-message, 1007 for invalid UTF-8, the close
// handshake, 1001 on Shutdown, the accounting (its tests are beside it).
// What is this package's: every message comes back as it came, written by
// the reader that read it.
//
// What a client sees (close codes, compression, time bounds, the writes of
// replies) is in servers/README.md.
package echo

import (
	"log/slog"
	"time"

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
)

// New builds echo-LIB on one of variants.WebSocketLibraries. m may be nil
// (-metrics=false): the same target without instrumentation.
func New(lib variants.Library) func(wsserver.Settings, *metrics.Metrics, *slog.Logger) (lifecycle.Target, error) {
	return func(s wsserver.Settings, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		return wsserver.New(lib, s, m, log, options)
	}
}

// NewTCP builds echo-tcp.
func NewTCP(o TCPOptions, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return newTCPTarget(o, m, log), nil
}

// TCPOptions are echo-tcp's settings.
type TCPOptions struct {
	Name     string // the variant, in the log of a recovered panic
	MaxConns int    // -max-conns: a connection over it is closed at once (0 = no cap)
	// Idle: a connection quiet that long is closed (-ping-interval plus
	// -ping-timeout, the time a WebSocket target gives a silent client).
	Idle time.Duration
	// Faults are the known-bad modes in force at start (-fault-*); the
	// target's Faults switches them while it serves.
	Faults faults.Modes
}

// options: replies only, no send queue; the reader is the one writer.
var options = wsserver.Options{Handler: wsserver.Echo{}}

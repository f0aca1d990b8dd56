// Package echo is the WebSocket echo target on three libraries (variants
// echo-gorilla, echo-coder and echo-gnet) and the raw TCP echo that they are
// measured against (echo-tcp).
//
// The WebSocket serving itself, the same on the three libraries, is
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

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
)

// NewGorilla builds echo-gorilla. m may be nil (-metrics=false): the same
// target without instrumentation.
func NewGorilla(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return wsserver.NewGorilla(cfg, m, log, options)
}

// NewCoder builds echo-coder.
func NewCoder(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return wsserver.NewCoder(cfg, m, log, options)
}

// NewGnet builds echo-gnet.
func NewGnet(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return wsserver.NewGnet(cfg, m, log, options)
}

// NewTCP builds echo-tcp.
func NewTCP(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
	return newTCPTarget(cfg, m, log), nil
}

// options: replies only, no send queue; the reader is the one writer.
var options = wsserver.Options{Handler: wsserver.Echo{}}

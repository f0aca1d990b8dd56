// Package targets holds the constructor of every variant in the catalog
// (servers/variants), by name. It imports every server package, so it is
// for main and the tests that start targets in process; a test or script
// that only selects variants imports servers/variants alone.
package targets

import (
	"log/slog"
	"maps"

	"github.com/knowngood/knowngood/servers/broadcast"
	"github.com/knowngood/knowngood/servers/echo"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
)

// Build builds a variant's target. m may be nil (-metrics=false): the same
// target without instrumentation.
type Build = func(config.Config, *metrics.Metrics, *slog.Logger) (lifecycle.Target, error)

// builds has one constructor per catalog row; a test checks that the two
// name the same variants.
var builds = func() map[string]Build {
	b := map[string]Build{
		"empty":    socketIO(socketio.Empty),
		"async":    socketIO(socketio.Async),
		"blocking": socketIO(socketio.Blocking),
		"echo-tcp": with(settings.TCP, echo.NewTCP),
	}
	for _, w := range variants.WebSocketLibraries() {
		b["echo-"+string(w.Library)] = with(settings.WebSocket, echo.New(w.Library))
		b["broadcast-"+string(w.Library)] = with(settings.Broadcast, broadcast.New(w.Library))
	}
	return b
}()

// with builds a target whose constructor takes its own options, mapped
// from the flags by opts.
func with[O any](opts func(config.Config) O, build func(O, *metrics.Metrics, *slog.Logger) (lifecycle.Target, error)) Build {
	return func(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		return build(opts(cfg), m, log)
	}
}

// For returns the constructor of the variant called name.
func For(name string) (Build, bool) {
	b, ok := builds[name]
	return b, ok
}

func socketIO(mode socketio.Mode) Build {
	return func(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		return socketio.New(mode, settings.SocketIO(cfg), m, log)
	}
}

// All returns every constructor by variant name; the map is the caller's.
func All() map[string]Build { return maps.Clone(builds) }

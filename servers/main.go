// Command knowngood runs one reference target, chosen with -variant.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"knowngood/servers/broadcast"
	"knowngood/servers/echo"
	"knowngood/servers/socketio"
	"knowngood/shared/admin"
	"knowngood/shared/config"
	"knowngood/shared/lifecycle"
	"knowngood/shared/metrics"
)

// variant is one row of the table: adding a variant is one row here plus
// the package that implements it.
type variant struct {
	name  string
	about string
	build func(config.Config, *metrics.Metrics, *slog.Logger) (lifecycle.Target, error)
}

var variants = []variant{
	{"empty", "Socket.IO, the connect handler does nothing", socketIO(socketio.Empty)},
	{"async", "Socket.IO, each connect waits -delay on its own timer; nothing else waits", socketIO(socketio.Async)},
	{"blocking", "Socket.IO, each connect holds the one shared loop for -delay: the k-th of N completes at about k x delay", socketIO(socketio.Blocking)},
	{"echo-gorilla", "WebSocket echo on gorilla/websocket: every message back as it came", echo.NewGorilla},
	{"echo-coder", "WebSocket echo on coder/websocket: every message back as it came", echo.NewCoder},
	{"echo-gnet", "WebSocket echo on gnet event loops with gobwas/ws framing (-loops)", echo.NewGnet},
	{"echo-tcp", "raw TCP echo, no framing: the floor the WebSocket echoes are measured against", echo.NewTCP},
	{"broadcast-gorilla", "websocket-shootout echo/broadcast (+ timed push) on gorilla/websocket", broadcast.NewGorilla},
	{"broadcast-coder", "websocket-shootout echo/broadcast (+ timed push) on coder/websocket", broadcast.NewCoder},
	{"broadcast-gnet", "websocket-shootout echo/broadcast (+ timed push) on gnet event loops (-loops)", broadcast.NewGnet},
}

func socketIO(mode socketio.Mode) func(config.Config, *metrics.Metrics, *slog.Logger) (lifecycle.Target, error) {
	return func(cfg config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		return socketio.New(mode, cfg, m, log)
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is main with its inputs and outputs passed in; it returns the exit
// status: 0, 1 (the target failed), or 2 (bad flags or environment).
// `knowngood healthcheck [flags]` asks a running target's /health instead.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "healthcheck" {
		return healthcheck(args[1:], getenv, stdout, stderr)
	}
	cfg, err := config.Parse(args, getenv, stdout)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "knowngood:", err)
		return 2
	}
	if cfg.List {
		for _, v := range variants {
			fmt.Fprintf(stdout, "%-18s %s\n", v.name, v.about)
		}
		return 0
	}
	v, ok := lookup(cfg.Variant)
	if !ok {
		fmt.Fprintf(stderr, "knowngood: invalid value for -variant: %q; want one of %s\n", cfg.Variant, names())
		return 2
	}

	log := newLogger(cfg, stderr)
	log.Info("config", "settings", cfg.Effective())
	var (
		reg *prometheus.Registry
		m   *metrics.Metrics
	)
	if cfg.Metrics {
		// The process's own registry, never the global one.
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		m = metrics.New(reg, cfg.Variant)
	}
	target, err := v.build(cfg, m, log)
	if err != nil {
		log.Error("building the target", "err", err)
		return 1
	}
	ctx, stop := lifecycle.SignalContext()
	defer stop()
	if err := lifecycle.Run(ctx, cfg, log, m, target, admin.Handler(cfg, reg, m)); err != nil {
		log.Error("exiting", "err", err)
		return 1
	}
	return 0
}

func lookup(name string) (variant, bool) {
	for _, v := range variants {
		if v.name == name {
			return v, true
		}
	}
	return variant{}, false
}

func names() string {
	var out []string
	for _, v := range variants {
		out = append(out, v.name)
	}
	return strings.Join(out, ", ")
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

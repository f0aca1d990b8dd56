// Package servers is the knowngood command: it runs one reference target,
// chosen with -variant (servers/knowngood is its main). The targets are in the
// packages below it; the catalog of variants in servers/variants.
package servers

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/servers/targets"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/buildinfo"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
)

// Main runs the command with the process's arguments, environment and
// standard streams, and returns its exit status.
func Main() int {
	return run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
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
	if cfg.Version {
		fmt.Fprintln(stdout, "knowngood", buildinfo.Read())
		return 0
	}
	if cfg.List {
		for _, v := range variants.All() {
			about := v.About
			if why := v.Unavailable(); why != "" {
				about += " (not on " + runtime.GOOS + ": " + why + ")"
			}
			fmt.Fprintf(stdout, "%-18s %s\n", v.Name, about)
		}
		return 0
	}
	v, ok := variants.Lookup(cfg.Variant)
	build, built := targets.For(cfg.Variant)
	if !ok || !built {
		fmt.Fprintf(stderr, "knowngood: invalid value for -variant: %q; want one of %s\n", cfg.Variant, strings.Join(variants.Names(), ", "))
		return 2
	}
	if why := v.Unavailable(); why != "" {
		fmt.Fprintf(stderr, "knowngood: variant %s is not available on %s: %s\n", v.Name, runtime.GOOS, why)
		return 2
	}

	if why := refused(cfg, v); why != "" {
		fmt.Fprintln(stderr, "knowngood: invalid value for "+why)
		return 2
	}

	log := newLogger(cfg, stderr)
	log.Info("config", "settings", cfg.Effective())
	if pct, ok := gcPercent(v, getenv); ok {
		debug.SetGCPercent(pct)
		log.Debug("garbage collector paced for idle connections", "gc_percent", pct)
	}
	warnIgnored(log, v, cfg.Given)
	var (
		reg *prometheus.Registry
		m   *metrics.Metrics
	)
	if cfg.Metrics {
		reg = metrics.NewRegistry()
		m = metrics.New(reg, cfg.Variant)
	}
	target, err := build(cfg, m, log)
	if err != nil {
		log.Error("building the target", "err", err)
		return 1
	}
	ctx, stop := lifecycle.SignalContext()
	defer stop()
	handler := admin.Handler(settings.Admin(cfg, v.Health(), target), reg, m, redisOf(target))
	if err := lifecycle.Run(ctx, settings.Run(cfg, target), log, m, lifecycle.WithURL(target, v.URL), handler); err != nil {
		log.Error("exiting", "err", err)
		return 1
	}
	return 0
}

// refused says why cfg's flags cannot run variant v together ("-flag: why"),
// "" when they can.
func refused(cfg config.Config, v variants.Variant) string {
	switch {
	// A flag a variant does not read is only a warning (see warnIgnored),
	// but -redis promises a cluster: a replica that would silently serve
	// alone breaks that promise, so it is refused.
	case cfg.Cluster.Redis != "" && !v.Reads("redis"):
		return fmt.Sprintf("-redis: variant %s has nothing to share between replicas; -redis is for the broadcast and Socket.IO variants", v.Name)
	case strings.Contains(cfg.Cluster.Redis, ",") && v.Family != variants.SocketIO:
		return fmt.Sprintf("-redis: several URLs spread the rooms of the Socket.IO variants over several Redis servers; variant %s takes one", v.Name)
	}
	if why := nativeGnetConflict(cfg, v); why != "" {
		return why
	}
	return ""
}

// gnetGCPercent is the garbage collector's GOGC for the gnet variants,
// unless GOGC is set. An idle gnet connection is about 0.6 KiB of live
// heap, and accepting it leaves more garbage than that, so with the
// default of 100 the heap, and the RSS with it, sits near twice what is
// live; at 50 it stays within 1.5x. The gnet loops allocate almost
// nothing per message (replies are built in pooled buffers), so the
// collector runs rarely under load and the rate does not move; the
// net/http variants allocate per connection and per read, and keep Go's
// default.
const gnetGCPercent = 50

// gcPercent is the GOGC that v runs with, if not Go's default: GOGC in
// the environment wins, as it does for every Go program.
func gcPercent(v variants.Variant, getenv func(string) string) (int, bool) {
	if v.Library != variants.Gnet || getenv("GOGC") != "" {
		return 0, false
	}
	return gnetGCPercent, true
}

// warnIgnored logs one line per flag given (on the command line or in the
// environment) that v does not read. A warning, not an error: compose
// files, env files and scripts pass one set of settings to every variant
// (a -max-message to echo-tcp, a KG_DELAY to empty), and refusing to start
// would break them for a setting that changes nothing; the line still
// tells whoever expected it to matter.
func warnIgnored(log *slog.Logger, v variants.Variant, given []string) {
	for _, name := range given {
		if !v.Reads(name) {
			log.Warn("flag ignored: this variant does not read it", "flag", "-"+name, "variant", v.Name)
		}
	}
}

// redisOf is target's Redis state when it has one (-redis).
func redisOf(target lifecycle.Target) admin.RedisState {
	if r, ok := target.(admin.RedisState); ok {
		return r
	}
	return nil
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// nativeGnetConflict is why -engine native-gnet cannot serve v as
// configured ("-flag: why"), or "": gnet serves WebSocket sessions only,
// and its event loops, which must never block, cannot be the one loop a
// blocking variant freezes.
func nativeGnetConflict(cfg config.Config, v variants.Variant) string {
	if cfg.SocketIO.Engine != config.EngineNativeGnet || !v.Reads("engine") {
		return ""
	}
	switch {
	case !slices.Contains(cfg.SocketIO.Transports, "websocket"):
		return "-transports: native-gnet serves WebSocket sessions only; -transports must include websocket"
	case v.Connect == variants.SharedLoop:
		return fmt.Sprintf("-engine: native-gnet cannot serve %s, whose connects freeze the server's one loop; use -engine native", v.Name)
	}
	return ""
}

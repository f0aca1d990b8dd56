// Package admin serves the admin listener: the live dashboard at / (and
// /dashboard), /metrics (Prometheus), /health and /stats (JSON), the
// run-time orders (POST /control/drop, and GET /control/storm for what
// followed; POST /control/push; POST /control/fault, and GET
// /control/fault for the known-bad modes in force), the Socket.IO Admin
// UI's page at /admin-ui/ on a Socket.IO target started with -admin-ui,
// and /debug/pprof/ when -pprof is on. It is a separate
// listener so that a load test on the target never competes with the
// scrape, and so that it can be bound to loopback alone.
//
// servers/README.md documents what each endpoint answers and every metric.
package admin

import (
	"cmp"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/knowngood/knowngood/servers/internal/adminui"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Health is the /health document.
type Health struct {
	Status            string  `json:"status"`
	Variant           string  `json:"variant"`
	UptimeSeconds     float64 `json:"uptime_seconds"`
	ConnectionsActive *int64  `json:"connections_active,omitempty"`
	// About: what a client speaks to the target, its family and connect
	// model, from the variant catalog.
	protocol.About
	// Redis is "up" or "down" on a replica started with -redis, absent
	// otherwise.
	Redis  string            `json:"redis,omitempty"`
	Config map[string]string `json:"config"`
}

// RedisState is what a target started with -redis reports of its
// connection to the cluster: "up", "down", or "" when it has none.
type RedisState interface {
	RedisState() string
}

// Options are what the admin listener shows beside the metrics.
type Options struct {
	Variant string
	// About is what the catalog says of the variant, for /health: loadgen
	// imports no server code, so it reads these properties rather than
	// keep a list of variant names; this package imports no catalog
	// either, so the caller passes them in.
	About protocol.About
	// Config is every flag's value in effect, for /health.
	Config map[string]string
	// Replicas are the admin URLs the dashboard shows beside this
	// process (-dashboard-replicas).
	Replicas []string
	Pprof    bool // serve /debug/pprof
	// Control is who may give orders at run time (/control/), and to what.
	Control Control
	// AdminUI, on a Socket.IO target started with -admin-ui, is what the
	// page of the Socket.IO Admin UI (/admin-ui/) is served with; nil
	// answers /admin-ui/ 404, saying why.
	AdminUI *adminui.Link
}

// Handler returns the admin mux: /metrics serves reg, /stats reads m.
// Either may be nil (-metrics=false makes both nil): its endpoint then
// answers 404 with a line that says why. redis may be nil too.
//
// /health answers 200 while the target serves its own clients, Redis or
// not: a replica whose Redis is down still serves, and a balancer that
// took it out would move its clients for nothing. /health?require=redis
// answers 503 while Redis is down, for whoever wants the stricter check.
func Handler(o Options, reg *prometheus.Registry, m *metrics.Metrics, redis RedisState) http.Handler {
	started := time.Now()
	mux := http.NewServeMux()
	metricsOff := func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "metrics are off (-metrics=false)", http.StatusNotFound)
	}
	if reg != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	} else {
		mux.HandleFunc("GET /metrics", metricsOff)
	}
	if m != nil {
		mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, m.Snapshot())
		})
	} else {
		mux.HandleFunc("GET /stats", metricsOff)
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		h := Health{Status: "ok", Variant: o.Variant, About: o.About, UptimeSeconds: time.Since(started).Seconds(), Config: o.config()}
		if m != nil {
			active := m.Snapshot().ConnectionsActive
			h.ConnectionsActive = &active
		}
		if redis != nil {
			h.Redis = redis.RedisState()
		}
		if r.URL.Query().Get("require") == "redis" && h.Redis != "up" {
			h.Status = "redis " + cmp.Or(h.Redis, "not configured (-redis)")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(h)
			return
		}
		writeJSON(w, h)
	})
	newDashboard(m, o.Replicas, o.AdminUI != nil).routes(mux)
	if o.AdminUI != nil {
		ui := adminui.Handler(o.AdminUI)
		mux.Handle("GET "+adminui.Prefix, ui)
		mux.Handle("GET "+strings.TrimSuffix(adminui.Prefix, "/"), ui)
	} else {
		mux.HandleFunc("GET "+adminui.Prefix, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the Socket.IO Admin UI is served for a Socket.IO variant started with -admin-ui", http.StatusNotFound)
		})
	}
	o.controlRoutes(mux, m)
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		// A leak check (make soak) compares resident memory between
		// rounds: right after a round it holds the round's garbage and
		// freed pages the runtime has not returned yet, which swing it by
		// tens of percent. This collects and returns them first.
		mux.HandleFunc("POST /debug/freeosmemory", func(w http.ResponseWriter, _ *http.Request) {
			debug.FreeOSMemory()
			w.WriteHeader(http.StatusNoContent)
		})
	}
	return mux
}

// config is the configuration in effect for /health: the flags' values,
// with the known-bad modes in force in place of those given at start
// (POST /control/fault changes them).
func (o Options) config() map[string]string {
	f := injectorOf(o.Control.Target)
	if f == nil {
		return o.Config
	}
	c := maps.Clone(o.Config)
	if c == nil {
		c = map[string]string{}
	}
	for name, v := range f.Modes().Values() {
		c["fault-"+name] = v
	}
	return c
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

func TestEndpoints(t *testing.T) {
	cfg := config.Default()
	cfg.Variant = "blocking"
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, cfg.Variant)
	m.Opened()
	h := admin.Handler(settings.Admin(cfg, protocol.About{}, nil), reg, m, nil)

	code, body := get(t, h, "/health")
	var health admin.Health
	if err := json.Unmarshal([]byte(body), &health); code != 200 || err != nil {
		t.Fatalf("/health: %d %v %s", code, err, body)
	}
	if health.Status != "ok" || health.Variant != "blocking" || health.ConnectionsActive == nil || *health.ConnectionsActive != 1 || health.Config["delay"] != "50ms" {
		t.Errorf("/health: %s", body)
	}
	if code, body := get(t, h, "/metrics"); code != 200 || !strings.Contains(body, `knowngood_connections_active{variant="blocking"} 1`) {
		t.Errorf("/metrics: %d %s", code, body)
	}
	if code, body := get(t, h, "/stats"); code != 200 || !strings.Contains(body, `"connections_active": 1`) {
		t.Errorf("/stats: %d %s", code, body)
	}
	if code, _ := get(t, h, "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without -pprof: %d, want 404", code)
	}

	cfg.Pprof = true
	if code, _ := get(t, admin.Handler(settings.Admin(cfg, protocol.About{}, nil), reg, m, nil), "/debug/pprof/"); code != 200 {
		t.Errorf("/debug/pprof/ with -pprof: %d, want 200", code)
	}
}

func TestMetricsOff(t *testing.T) {
	h := admin.Handler(settings.Admin(config.Default(), protocol.About{}, nil), nil, nil, nil)
	for _, path := range []string{"/metrics", "/stats"} {
		if code, body := get(t, h, path); code != http.StatusNotFound || !strings.Contains(body, "-metrics=false") {
			t.Errorf("%s with -metrics=false: %d %s", path, code, body)
		}
	}
	if code, _ := get(t, h, "/health"); code != 200 {
		t.Errorf("/health with -metrics=false: %d", code)
	}
}

// TestPprofOnlyWithFlag: /debug/pprof/ is not served unless -pprof.
func TestPprofOnlyWithFlag(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := config.Default()
		cfg.Pprof = on
		srv := httptest.NewServer(admin.Handler(settings.Admin(cfg, protocol.About{}, nil), nil, metrics.New(prometheus.NewRegistry(), "empty"), nil))
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/symbol"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
				t.Errorf("-pprof=%v: %s answered %d, want %d", on, path, resp.StatusCode, want)
			}
		}
		resp, err := http.Post(srv.URL+"/debug/freeosmemory", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusNoContent}[on]; resp.StatusCode != want {
			t.Errorf("-pprof=%v: POST /debug/freeosmemory answered %d, want %d", on, resp.StatusCode, want)
		}
		srv.Close()
	}
}

type redisState string

func (r redisState) RedisState() string { return string(r) }

// TestHealthRedis: a replica whose Redis is down still answers 200 (it
// serves its own clients) and says so; ?require=redis makes it a 503.
func TestHealthRedis(t *testing.T) {
	cases := []struct {
		state      admin.RedisState
		plain      int
		strict     int
		wantInBody string
	}{
		{redisState("up"), 200, 200, `"redis": "up"`},
		{redisState("down"), 200, 503, `"redis": "down"`},
		{nil, 200, 503, `"status": "ok"`},
	}
	for _, c := range cases {
		h := admin.Handler(settings.Admin(config.Default(), protocol.About{}, nil), nil, nil, c.state)
		code, body := get(t, h, "/health")
		if code != c.plain || !strings.Contains(body, c.wantInBody) {
			t.Errorf("%v: /health %d %s; want %d with %s", c.state, code, body, c.plain, c.wantInBody)
		}
		if code, body := get(t, h, "/health?require=redis"); code != c.strict {
			t.Errorf("%v: /health?require=redis %d %s; want %d", c.state, code, body, c.strict)
		}
	}
}

// TestHealthAbout: /health carries the properties its caller passed,
// which loadgen reads in place of variant names.
func TestHealthAbout(t *testing.T) {
	cfg := config.Default()
	about := protocol.About{Protocol: protocol.ProtocolSocketIO, Family: "socketio", Connect: protocol.ConnectSharedLoop}
	_, body := get(t, admin.Handler(settings.Admin(cfg, about, nil), nil, nil, nil), "/health")
	var health admin.Health
	if err := json.Unmarshal([]byte(body), &health); err != nil {
		t.Fatalf("/health: %v %s", err, body)
	}
	if health.About != about {
		t.Errorf("/health says %+v, want %+v", health.About, about)
	}
}

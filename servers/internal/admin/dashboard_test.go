package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/admin/dashboardtest"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/shared/browser"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/hops"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// replica is an admin listener with metrics of its own, as one target
// process has.
type replica struct {
	m   *metrics.Metrics
	srv *httptest.Server
}

func startReplica(t *testing.T, variant string, replicas ...string) replica {
	t.Helper()
	cfg := config.Default()
	cfg.Variant = variant
	cfg.Dashboard.Replicas = replicas
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, variant)
	srv := httptest.NewServer(admin.Handler(settings.Admin(cfg, protocol.About{}, nil), reg, m, nil))
	t.Cleanup(srv.Close)
	return replica{m: m, srv: srv}
}

// TestDashboardRoutes: the page at / and /dashboard, its files, and its
// figures, all from the binary.
func TestDashboardRoutes(t *testing.T) {
	r := startReplica(t, "empty")
	h := r.srv.Config.Handler
	for _, path := range []string{"/", "/dashboard"} {
		if code, body := get(t, h, path); code != 200 || !strings.Contains(body, `<script src="/dashboard/dashboard.js">`) {
			t.Errorf("%s: %d %.200s", path, code, body)
		}
	}
	for path, want := range map[string]string{"/dashboard/dashboard.js": "function poll()", "/dashboard/dashboard.css": "#charts"} {
		if code, body := get(t, h, path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, no %q", path, code, want)
		}
	}
	for _, path := range []string{"/dashboard/nothing.js", "/nothing"} {
		if code, _ := get(t, h, path); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
	r.m.Opened()
	code, body := get(t, h, "/dashboard/stats")
	var cols []admin.ReplicaStats
	if err := json.Unmarshal([]byte(body), &cols); code != 200 || err != nil || len(cols) != 1 || cols[0].Stats == nil || cols[0].Stats.ConnectionsActive != 1 {
		t.Errorf("/dashboard/stats: %d %v %s", code, err, body)
	}

	_, body = get(t, admin.Handler(settings.Admin(config.Default(), protocol.About{}, nil), nil, nil, nil), "/dashboard/stats")
	if !strings.Contains(body, "-metrics=false") {
		t.Errorf("/dashboard/stats with -metrics=false: %s", body)
	}
}

// TestDashboardReplicasBounded: with -dashboard-replicas each replica's
// /stats is fetched for the page; one that does not answer in time, one
// that answers an error, one that answers too much and one that is not
// there are each shown with the reason, and the others' figures come all
// the same.
func TestDashboardReplicasBounded(t *testing.T) {
	good := startReplica(t, "echo-gnet")
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(release) })
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "metrics are off (-metrics=false)", http.StatusNotFound)
	}))
	t.Cleanup(failing.Close)
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"variant":"` + strings.Repeat("x", 2<<20) + `"}`))
	}))
	t.Cleanup(huge.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	front := startReplica(t, "echo-gnet", good.srv.URL, hanging.URL, failing.URL, huge.URL, gone.URL)
	_, body := get(t, front.srv.Config.Handler, "/dashboard/stats")
	var cols []admin.ReplicaStats
	if err := json.Unmarshal([]byte(body), &cols); err != nil || len(cols) != 5 {
		t.Fatalf("/dashboard/stats: %v %s", err, body)
	}
	if cols[0].Stats == nil || cols[0].Stats.Variant != "echo-gnet" || cols[0].Error != "" {
		t.Errorf("the replica that answers: %+v", cols[0])
	}
	for i, want := range []string{"", "no answer within", "404 Not Found: metrics are off", "more than 1048576 bytes", "connection refused"} {
		if c := cols[i]; !strings.Contains(c.Error, want) || (want != "" && c.Stats != nil) || c.Admin == "" {
			t.Errorf("replica %d (%s): %+v, want the error %q", i, c.Admin, c, want)
		}
	}
}

// TestDashboardInBrowser: the page loads in Chromium with no console
// error, shows exactly what /stats says while nothing moves, follows the
// counts when they move, and draws its charts with no text clipped or
// overlapping. DASHBOARD_SCREENSHOT=DIR keeps a picture of it.
func TestDashboardInBrowser(t *testing.T) {
	b := browser.For(t)
	r := startReplica(t, "echo-gorilla")
	r.m.Opened()
	r.m.Handshake(protocol.ResultOK, "websocket", 3*time.Millisecond)
	r.m.Received(10, 100)
	r.m.Sent(10, 100)
	r.m.AcceptError("EMFILE")
	r.m.CapRefused()
	r.m.Fault("drop")
	p := b.Open(t, r.srv.URL+"/")
	p.WaitFor(t, "two refreshes", dashboardtest.PollsJS+" >= 2", 20*time.Second)
	page := dashboardtest.Read(t, p)
	for _, bad := range dashboardtest.Exact(page.Columns["0"], r.m.Snapshot()) {
		t.Error(bad)
	}
	if len(page.Columns) != 1 {
		t.Errorf("one process, %d columns: %+v", len(page.Columns), page.Columns)
	}
	if n := p.TextLayout(t); n < 20 {
		t.Errorf("%d chart texts, want the axes of every chart", n)
	}

	// Counts that move show up at the next refresh, with a rate.
	r.m.Received(500, 500)
	r.m.Closed("1000")
	p.WaitFor(t, "the new counts", `document.querySelector('td[data-col="0"][data-key="received"]').dataset.value === "510"`, 20*time.Second)
	p.WaitFor(t, "a rate", `Number(document.querySelector('td[data-col="0"][data-key="in_rate"]').dataset.value) > 0`, 20*time.Second)
	if page := dashboardtest.Read(t, p); page.Columns["0"].Figures["closed"] == nil || *page.Columns["0"].Figures["closed"] != 1 {
		t.Errorf("closed: %v", page.Columns["0"].Figures["closed"])
	}

	// A hop of stamped events shows as its p99 over the last refresh.
	// It is recorded again until a refresh shows it, since a refresh
	// that comes after shows the next second's, without it.
	seen := make(chan struct{})
	defer close(seen)
	go func() {
		for {
			select {
			case <-seen:
				return
			case <-time.After(100 * time.Millisecond):
				r.m.Hop(hops.Redis, 40*time.Millisecond)
			}
		}
	}()
	p.WaitFor(t, "the Redis hop's p99", `Number(document.querySelector('td[data-col="0"][data-key="hop_redis"]').dataset.value) >= 40`, 20*time.Second)
	screenshot(t, p, "dashboard-one.png")
	p.NoProblems(t)
}

// screenshot keeps a picture of the page in $DASHBOARD_SCREENSHOT, if set.
func screenshot(t *testing.T, p *browser.Page, name string) {
	if dir := os.Getenv("DASHBOARD_SCREENSHOT"); dir != "" {
		p.Screenshot(t, filepath.Join(dir, name))
	}
}

// TestDashboardClusterInBrowser: with -dashboard-replicas the page shows
// each replica in a column of its own, one that is gone with the reason,
// and their sum.
func TestDashboardClusterInBrowser(t *testing.T) {
	b := browser.For(t)
	a, c := startReplica(t, "broadcast-gnet"), startReplica(t, "broadcast-gnet")
	for i := 0; i < 3; i++ {
		a.m.Opened()
	}
	c.m.Opened()
	a.m.Received(7, 7)
	c.m.Received(5, 5)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	front := startReplica(t, "broadcast-gnet", a.srv.URL, c.srv.URL, gone.URL)
	p := b.Open(t, front.srv.URL+"/dashboard")
	p.WaitFor(t, "two refreshes", dashboardtest.PollsJS+" >= 2", 20*time.Second)
	page := dashboardtest.Read(t, p)
	for id, s := range map[string]protocol.Stats{"0": a.m.Snapshot(), "1": c.m.Snapshot()} {
		for _, bad := range dashboardtest.Exact(page.Columns[id], s) {
			t.Errorf("replica %s: %s", id, bad)
		}
	}
	sum := page.Columns["sum"]
	if v := sum.Figures["active"]; v == nil || *v != 4 {
		t.Errorf("sum of active: %v, want 4", v)
	}
	if v := sum.Figures["received"]; v == nil || *v != 12 {
		t.Errorf("sum of received: %v, want 12", v)
	}
	if h := page.Columns["2"].Heading; !strings.Contains(h, "connection refused") {
		t.Errorf("the replica that is gone: %q", h)
	}
	if h := sum.Heading; !strings.Contains(h, "2 of 3 replicas") {
		t.Errorf("the sum's heading: %q", h)
	}
	p.TextLayout(t)
	screenshot(t, p, "dashboard-cluster.png")
	p.NoProblems(t)
}

package admin

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// The dashboard is plain HTML, CSS and hand-written JavaScript that draws
// its charts as SVG, embedded in the binary: it needs no build step, loads
// nothing from the network (a target is often run where there is none),
// and stays small enough to read. It refreshes once a second by polling
// /dashboard/stats rather than holding a server-sent-events stream: a
// poll is one short request that the admin listener's idle and body
// timeouts already bound, and a page left open holds nothing on the
// target between polls.
//
//go:embed dashboard
var dashboardFiles embed.FS

// Bounds of the replicas' fetch behind /dashboard/stats: a replica that
// does not answer within replicaTimeout is shown as unreachable rather
// than holding up the others' figures past the next refresh, and its
// answer is read up to maxStatsBytes (a /stats document is a few KiB).
// Answers are kept for replicaCacheFor, so that several open pages cost
// the replicas no more than one.
const (
	replicaTimeout  = 800 * time.Millisecond
	maxStatsBytes   = 1 << 20
	replicaCacheFor = 500 * time.Millisecond
)

// ReplicaStats is one column of the dashboard: a replica's /stats
// document, or why it could not be read.
type ReplicaStats struct {
	// Admin is the replica's admin URL; "" is the process that serves
	// the page.
	Admin string          `json:"admin"`
	Stats *protocol.Stats `json:"stats,omitempty"`
	Error string          `json:"error,omitempty"`
}

// dashboard serves the page and the figures it reads.
type dashboard struct {
	m        *metrics.Metrics
	replicas []string
	adminUI  bool // link the Socket.IO Admin UI (-admin-ui)
	client   *http.Client

	mu      sync.Mutex // held across a fetch: pages that ask meanwhile share it
	fetched time.Time
	last    []ReplicaStats
}

func newDashboard(m *metrics.Metrics, replicas []string, adminUI bool) *dashboard {
	return &dashboard{
		m:        m,
		replicas: replicas,
		adminUI:  adminUI,
		client: &http.Client{
			Timeout: replicaTimeout,
			// A fresh connection per fetch: at most two a second per
			// replica, and no idle connection left behind in either
			// process.
			Transport: &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: replicaTimeout},
		},
	}
}

// routes adds the dashboard to mux: the page at / and /dashboard, its
// script and style under /dashboard/, its figures at /dashboard/stats.
func (d *dashboard) routes(mux *http.ServeMux) {
	files, _ := fs.Sub(dashboardFiles, "dashboard") // the directory is embedded above
	index, _ := fs.ReadFile(files, "index.html")
	if d.adminUI {
		index = bytes.Replace(index, []byte(` id="admin-ui" class="note" hidden>`), []byte(` id="admin-ui" class="note">`), 1)
	}
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(index))
	}
	mux.HandleFunc("GET /{$}", page)
	mux.HandleFunc("GET /dashboard", page)
	assets := http.StripPrefix("/dashboard/", http.FileServerFS(files))
	mux.Handle("GET /dashboard/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		assets.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /dashboard/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, d.stats(r.Context()))
	})
}

// stats is every column's figures: this process's own snapshot, or with
// -dashboard-replicas each replica's /stats, fetched at once.
func (d *dashboard) stats(ctx context.Context) []ReplicaStats {
	if len(d.replicas) == 0 {
		if d.m == nil {
			return []ReplicaStats{{Error: "metrics are off (-metrics=false)"}}
		}
		s := d.m.Snapshot()
		return []ReplicaStats{{Stats: &s}}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if time.Since(d.fetched) < replicaCacheFor {
		return d.last
	}
	out := make([]ReplicaStats, len(d.replicas))
	var wg sync.WaitGroup
	for i, admin := range d.replicas {
		wg.Go(func() {
			s, err := d.fetch(ctx, admin)
			out[i] = ReplicaStats{Admin: admin, Stats: s}
			if err != nil {
				out[i].Error = err.Error()
			}
		})
	}
	wg.Wait()
	d.fetched, d.last = time.Now(), out
	return out
}

// fetch reads one replica's /stats.
func (d *dashboard) fetch(ctx context.Context, admin string) (*protocol.Stats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(admin, "/")+"/stats", nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return nil, fmt.Errorf("no answer within %s", replicaTimeout)
		}
		if errors.As(err, &ue) {
			err = ue.Err // the column names the replica already
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatsBytes+1))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("/stats answered %s: %s", resp.Status, strings.TrimSpace(string(body[:min(len(body), 200)])))
	case len(body) > maxStatsBytes:
		return nil, fmt.Errorf("/stats answered more than %d bytes", maxStatsBytes)
	}
	var s protocol.Stats
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("/stats is not a knowngood /stats document: %v", err)
	}
	return &s, nil
}

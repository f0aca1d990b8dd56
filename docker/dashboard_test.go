// Package docker holds the tests of the files in docker/: the Grafana
// dashboard, the Prometheus scrape configs (with Debian's prometheus against
// a live target) and the compose files (built and run on a Docker engine).
package docker

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/metrics/metricstest"
)

// registryNames is every metric name a knowngood target of any family
// exposes, with each histogram's _bucket, _sum and _count series: the
// dashboard shows every variant.
func registryNames(t *testing.T) map[string]bool {
	reg := metrics.NewRegistry()
	metricstest.RecordAll(metrics.New(reg, "empty"))
	return metricstest.Names(t, reg)
}

// metricName finds the metric names in a PromQL expression: the
// identifiers of the families knowngood exposes (its own, Go's, the
// process's).
var metricName = regexp.MustCompile(`\b(?:knowngood|go|process)_[a-zA-Z0-9_]+`)

// TestDashboard checks docker/grafana/dashboards/knowngood.json: valid
// JSON, panels with queries, and every metric name a query or the variable
// uses is one the registry has.
func TestDashboard(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("grafana/dashboards/knowngood.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("knowngood.json is not valid JSON: %v", err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("knowngood.json: uid %q, %d panels", d.UID, len(d.Panels))
	}
	have := registryNames(t)
	var exprs []string
	for _, v := range d.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if p.Datasource.UID != "prometheus" {
			t.Errorf("panel %q: datasource uid %q, want the provisioned \"prometheus\"", p.Title, p.Datasource.UID)
		}
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	used := map[string]bool{}
	for _, e := range exprs {
		for _, name := range metricName.FindAllString(e, -1) {
			used[name] = true
			if !have[name] {
				t.Errorf("the dashboard uses %s, which no knowngood target exposes: %s", name, e)
			}
		}
	}
	// What a user opens the dashboard for: handshakes and their latency,
	// connections, messages, drops, disconnects, CPU and memory.
	for _, name := range []string{
		"knowngood_handshakes_total", "knowngood_handshake_duration_seconds_bucket",
		"knowngood_connections_active", "knowngood_messages_received_total",
		"knowngood_broadcast_dropped_total", "knowngood_disconnects_total",
		"process_cpu_seconds_total", "process_resident_memory_bytes",
	} {
		if !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
	// Every knowngood_ metric should be on it somewhere.
	for name := range have {
		if strings.HasPrefix(name, "knowngood_") && !strings.HasSuffix(name, "_sum") && !strings.HasSuffix(name, "_count") &&
			!strings.HasSuffix(name, "_bucket") && !used[name] && !used[name+"_bucket"] {
			t.Errorf("the dashboard does not use %s", name)
		}
	}
}

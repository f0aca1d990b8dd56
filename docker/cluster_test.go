package docker

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/prereq"
)

// composeConfig is what `docker compose config --format json` says of the
// services this test reads.
type composeConfig struct {
	Services map[string]struct {
		Image       string            `json:"image"`
		Environment map[string]string `json:"environment"`
		Ports       []struct {
			Target    int    `json:"target"`
			Published string `json:"published"`
		} `json:"ports"`
		Volumes []struct {
			Source string `json:"source"`
			Target string `json:"target"`
		} `json:"volumes"`
	} `json:"services"`
}

var upstreamServer = regexp.MustCompile(`(?m)^\s*server ([a-z0-9-]+:[0-9]+);`)

// TestComposeCluster validates compose.cluster.yaml with Docker Compose's
// own parser (no engine needed; base images cannot be pulled on every
// machine, so scripts/cluster.sh is where the cluster runs in the tests):
// for each nginx balancing (KG_LB), nginx mounts that upstream file, whose
// servers are exactly the replicas' services; every replica runs a
// variant that takes -redis, on the compose Redis, with an admin port
// published on a host port of its own, and a dashboard that shows every
// replica; Prometheus (profile observe)
// scrapes every replica's admin port, and promtool accepts its config.
func TestComposeCluster(t *testing.T) {
	t.Parallel()
	compose := composeCommand(t)
	lbs, err := filepath.Glob("nginx/upstream-*.conf")
	if err != nil || len(lbs) == 0 {
		t.Fatalf("no nginx/upstream-*.conf: %v", err)
	}
	scraped := scrapeTargets(t, "prometheus/prometheus.cluster.yml")
	for _, file := range lbs {
		lb := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "upstream-"), ".conf")
		t.Run(lb, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, compose[0], append(compose[1:], "-f", "compose.cluster.yaml", "--profile", "observe", "config", "--format", "json")...)
			cmd.Env = append(os.Environ(), "KG_LB="+lb)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("docker compose config: %v\n%s", err, stderrOf(err))
			}
			var cfg composeConfig
			if err := json.Unmarshal(out, &cfg); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"redis", "nginx", "prometheus"} {
				if _, ok := cfg.Services[name]; !ok {
					t.Errorf("no service %s", name)
				}
			}
			var replicas, admins []string
			published := map[string]string{}
			dashboards := map[string]string{} // each replica's -dashboard-replicas
			for name, s := range cfg.Services {
				if s.Environment["KG_REDIS"] == "" {
					continue
				}
				replicas = append(replicas, name+":"+strings.TrimPrefix(s.Environment["KG_ADDR"], ":"))
				if s.Environment["KG_REDIS"] != "redis://redis:6379/0" {
					t.Errorf("%s: KG_REDIS %q, want the compose Redis", name, s.Environment["KG_REDIS"])
				}
				if v, ok := variants.Lookup(s.Environment["KG_VARIANT"]); !ok || !v.Reads("redis") {
					t.Errorf("%s runs %q, which is not a variant that takes -redis", name, s.Environment["KG_VARIANT"])
				}
				admin := name + s.Environment["KG_ADMIN_ADDR"]
				admins = append(admins, "http://"+admin)
				dashboards[name] = s.Environment["KG_DASHBOARD_REPLICAS"]
				if !slices.Contains(scraped, admin) {
					t.Errorf("prometheus.cluster.yml does not scrape %s", admin)
				}
				for _, p := range s.Ports {
					if ":"+strconv.Itoa(p.Target) == s.Environment["KG_ADMIN_ADDR"] {
						if other, taken := published[p.Published]; taken {
							t.Errorf("%s and %s publish their admin on host port %s", name, other, p.Published)
						}
						published[p.Published] = name
					}
				}
			}
			slices.Sort(replicas)
			slices.Sort(admins)
			for name, list := range dashboards {
				if got := slices.Sorted(slices.Values(strings.Split(list, ","))); !slices.Equal(got, admins) {
					t.Errorf("%s: KG_DASHBOARD_REPLICAS %q, want every replica's admin %v: its dashboard shows the whole cluster", name, list, admins)
				}
			}
			if len(replicas) < 2 || len(published) != len(replicas) || len(scraped) != len(replicas) {
				t.Errorf("replicas %v, admin ports published %v, scraped %v: want one admin port and one scrape target each, two replicas at least", replicas, published, scraped)
			}
			var mounted string
			for _, v := range cfg.Services["nginx"].Volumes {
				if v.Target == "/etc/nginx/knowngood/upstream.conf" {
					mounted = v.Source
				}
			}
			if filepath.Base(mounted) != filepath.Base(file) {
				t.Fatalf("nginx mounts %q as its upstream, want %s", mounted, file)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var servers []string
			for _, m := range upstreamServer.FindAllStringSubmatch(string(b), -1) {
				servers = append(servers, m[1])
			}
			slices.Sort(servers)
			if !slices.Equal(servers, replicas) {
				t.Errorf("%s balances over %v; the replicas are %v", file, servers, replicas)
			}
		})
	}
	promtool, err := exec.LookPath("promtool")
	prereq.Need(t, "promtool (Debian's prometheus)", err)
	if out, err := exec.Command(promtool, "check", "config", "prometheus/prometheus.cluster.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// stderrOf is what a failed command wrote to stderr.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

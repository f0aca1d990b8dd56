package docker

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/prereq"
)

// TestPromtoolChecksConfigs runs Debian's promtool over the scrape configs
// that compose.yaml and compose.host.yaml mount.
func TestPromtoolChecksConfigs(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	prereq.Need(t, "promtool (Debian's prometheus)", err)
	out, err := exec.Command(promtool, "check", "config", "prometheus/prometheus.yml", "prometheus/prometheus.host.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// TestPrometheusScrapesTarget runs Debian's prometheus binary with a scrape
// config like docker/prometheus/prometheus.host.yml, pointed at a live
// target, and waits (60 s at most) until the knowngood metrics can be
// queried with the target's variant label.
func TestPrometheusScrapesTarget(t *testing.T) {
	t.Parallel()
	prom, err := exec.LookPath("prometheus")
	prereq.Need(t, "prometheus (Debian)", err)
	tg := harness.Start(t, "-variant", "echo-coder")

	dir := t.TempDir()
	cfg, err := os.ReadFile("prometheus/prometheus.host.yml")
	if err != nil {
		t.Fatal(err)
	}
	// The host config's first target, moved to this target's admin port.
	admin := tg.AdminAddr
	conf := strings.Replace(string(cfg), "127.0.0.1:9100", admin, 1)
	conf = strings.Replace(conf, "scrape_interval: 5s", "scrape_interval: 1s", 1)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	web := freeAddr(t)
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+web, "--log.level=warn")
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := harness.StopAtCleanup(t, cmd, os.Interrupt, 15*time.Second)

	want := []string{"knowngood_build_info", "knowngood_connections_active", "knowngood_connections_total", "process_resident_memory_bytes", "go_goroutines"}
	deadline := time.Now().Add(60 * time.Second)
	for _, name := range want {
		q := fmt.Sprintf(`%s{job="knowngood",instance=%q}`, name, admin)
		for {
			n, variant, err := query(web, q)
			if err == nil && n > 0 {
				if strings.HasPrefix(name, "knowngood_") && variant != "echo-coder" {
					t.Errorf("%s: variant label %q, want echo-coder", q, variant)
				}
				break
			}
			select {
			case <-done:
				log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
				t.Fatalf("prometheus exited:\n%s", log)
			default:
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
				t.Fatalf("prometheus has no %s after 60s (last error %v); its log:\n%s", q, err, log)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// query runs an instant query and returns the number of series and the
// variant label of the first.
func query(web, q string) (int, string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + web + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, "", err
	}
	if r.Status != "success" {
		return 0, "", fmt.Errorf("query %s: status %q", q, r.Status)
	}
	if len(r.Data.Result) == 0 {
		return 0, "", nil
	}
	return len(r.Data.Result), r.Data.Result[0].Metric["variant"], nil
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

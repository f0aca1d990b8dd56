package servers

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/variants"
)

func TestHealthURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		":9100":          "http://127.0.0.1:9100/health",
		"0.0.0.0:9101":   "http://127.0.0.1:9101/health",
		"[::]:9102":      "http://127.0.0.1:9102/health",
		"127.0.0.2:9103": "http://127.0.0.2:9103/health",
	} {
		if got, err := healthURL(in); err != nil || got != want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := healthURL("9100"); err == nil {
		t.Error("healthURL(9100) gave no error")
	}
}

// TestHealthcheck runs `knowngood healthcheck` as the image's HEALTHCHECK
// does: against a running target (0), then against a port nobody listens on
// (1). The admin address comes from the environment, as in docker/compose.yaml.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	s := startServer(t, "-variant", "echo-gorilla")
	admin := strings.TrimPrefix(s.admin, "http://")
	check := func(addr string) (int, string) {
		cmd := exec.Command(binary, "healthcheck")
		cmd.Env = append(cmd.Environ(), "KG_ADMIN_ADDR="+addr)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return cmd.ProcessState.ExitCode(), strings.TrimSpace(out.String()) + errString(err)
	}
	if code, out := check(admin); code != 0 || !strings.Contains(out, "echo-gorilla") {
		t.Errorf("healthcheck of a running target: exit %d, %q", code, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	if code, out := check(closed); code != 1 {
		t.Errorf("healthcheck of %s (nobody listening): exit %d, %q; want 1", closed, code, out)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

// TestHealthAbout: a running target publishes its catalog properties on
// /health, which loadgen reads in place of a list of variant names.
func TestHealthAbout(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"blocking", "echo-gorilla"} {
		v, _ := variants.Lookup(name)
		s := startServer(t, "-variant", name)
		resp, err := http.Get(s.admin + "/health")
		if err != nil {
			t.Fatal(err)
		}
		var health admin.Health
		err = json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: /health: %v", name, err)
		}
		if health.About != v.Health() || health.About.Family == "" {
			t.Errorf("%s: /health says %+v, want %+v", name, health.About, v.Health())
		}
	}
}

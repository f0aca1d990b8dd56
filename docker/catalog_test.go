package docker

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/servers/variants"
)

// TestComposeCoversCatalog: every variant of the catalog is a service of
// compose.yaml (running that variant) and of compose.host.yaml, on ports
// of its own, and both Prometheus configs scrape its admin port; every
// target service runs a variant of the catalog. A new variant that is not
// added to the docker files fails here, without Docker.
func TestComposeCoversCatalog(t *testing.T) {
	t.Parallel()
	bridge := composeServices(t, "compose.yaml")
	host := hostServices(t)
	scraped := scrapeTargets(t, "prometheus/prometheus.yml")
	scrapedHost := scrapeTargets(t, "prometheus/prometheus.host.yml")
	ports := map[string]string{}
	for _, v := range variants.All() {
		env, ok := bridge[v.Name]
		switch {
		case !ok:
			t.Errorf("compose.yaml has no service %s", v.Name)
			continue
		case env["KG_VARIANT"] != v.Name:
			t.Errorf("compose.yaml: service %s runs KG_VARIANT %q", v.Name, env["KG_VARIANT"])
		}
		for _, addr := range []string{env["KG_ADDR"], env["KG_ADMIN_ADDR"]} {
			if other, taken := ports[addr]; taken || addr == "" {
				t.Errorf("compose.yaml: service %s listens on %q, as %s does", v.Name, addr, other)
			}
			ports[addr] = v.Name
		}
		if want := v.Name + env["KG_ADMIN_ADDR"]; !slices.Contains(scraped, want) {
			t.Errorf("prometheus.yml does not scrape %s", want)
		}
		h, ok := host[v.Name]
		if !ok {
			t.Errorf("compose.host.yaml has no service %s", v.Name)
			continue
		}
		if h.addr != "127.0.0.1"+env["KG_ADDR"] || h.admin != "127.0.0.1"+env["KG_ADMIN_ADDR"] {
			t.Errorf("compose.host.yaml: %s on %s and %s; want compose.yaml's ports on 127.0.0.1", v.Name, h.addr, h.admin)
		}
		if !slices.Contains(scrapedHost, h.admin) {
			t.Errorf("prometheus.host.yml does not scrape %s", h.admin)
		}
	}
	for name, env := range bridge {
		if _, ok := variants.Lookup(env["KG_VARIANT"]); env["KG_VARIANT"] != "" && !ok {
			t.Errorf("compose.yaml: service %s runs %q, which is not in the catalog", name, env["KG_VARIANT"])
		}
	}
	if n := len(variants.Names()); len(scraped) != n || len(scrapedHost) != n {
		t.Errorf("the Prometheus configs scrape %d and %d targets; the catalog has %d variants", len(scraped), len(scrapedHost), n)
	}
}

// hostAddrs are a service's addresses on the host network.
type hostAddrs struct{ addr, admin string }

// hostServices reads each service's KG_ADDR and KG_ADMIN_ADDR from
// compose.host.yaml.
func hostServices(t *testing.T) map[string]hostAddrs {
	out := map[string]hostAddrs{}
	for name, env := range composeServices(t, "compose.host.yaml") {
		if env["KG_ADDR"] != "" {
			out[name] = hostAddrs{env["KG_ADDR"], env["KG_ADMIN_ADDR"]}
		}
	}
	return out
}

var (
	serviceLine = regexp.MustCompile(`^  ([a-z0-9-]+):\s*$`)
	envLine     = regexp.MustCompile(`^\s+environment: \{(.*)\}\s*$`)
	hostPort    = regexp.MustCompile(`^[a-z0-9.-]+:[0-9]+$`)
)

// composeServices reads the one-line environment ({KEY: value, ...}) of
// each service of a compose file; the files keep each target's on one line
// so that this needs no YAML parser.
func composeServices(t *testing.T, path string) map[string]map[string]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]string{}
	inServices, service := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#") {
			inServices = line == "services:"
			continue
		}
		if m := serviceLine.FindStringSubmatch(line); inServices && m != nil {
			service = m[1]
		} else if m := envLine.FindStringSubmatch(line); inServices && m != nil && service != "" {
			out[service] = flowMap(m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// flowMap parses `KEY: value, KEY: "value"`, values without commas.
func flowMap(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, ":")
		out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	return out
}

// scrapeTargets reads the `- HOST:PORT` lines of a Prometheus config.
func scrapeTargets(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok && hostPort.MatchString(rest) {
			out = append(out, rest)
		}
	}
	return out
}

// TestRecipePorts: the Makefile's COMPOSE_PORTS, which the recipe targets
// (make k6-echo COMPOSE=1 VARIANT=...) aim at, is compose.yaml's port of
// every variant; and the recipes resolve to make run-server's port by
// default, to the variant's compose port with COMPOSE=1, shifted by
// KG_PORT_PREFIX as compose shifts it.
func TestRecipePorts(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(mk), "\\\n", " ")
	var table []string
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, "COMPOSE_PORTS :="); ok {
			table = strings.Fields(rest)
		}
	}
	bridge := composeServices(t, "compose.yaml")
	got := map[string]string{}
	for _, entry := range table {
		name, port, _ := strings.Cut(entry, ":")
		got[name] = port
	}
	for _, v := range variants.All() {
		if want := strings.TrimPrefix(bridge[v.Name]["KG_ADDR"], ":"); got[v.Name] != want {
			t.Errorf("Makefile COMPOSE_PORTS has %s on %q; compose.yaml on %q", v.Name, got[v.Name], want)
		}
	}
	if len(got) != len(variants.Names()) {
		t.Errorf("Makefile COMPOSE_PORTS has %d variants; the catalog %d: %v", len(got), len(variants.Names()), table)
	}

	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"js-ws-echo"}, "--url ws://127.0.0.1:8080/"},
		{[]string{"js-ws-echo", "PORT=9000"}, "--url ws://127.0.0.1:9000/"},
		{[]string{"js-ws-echo", "COMPOSE=1"}, "--url ws://127.0.0.1:8083/"},
		{[]string{"js-ws-echo", "COMPOSE=1", "VARIANT=echo-gnet", "KG_PORT_PREFIX=1"}, "--url ws://127.0.0.1:18085/"},
		{[]string{"js-handshake", "COMPOSE=1"}, "--url http://127.0.0.1:8080 "},
		{[]string{"js-handshake", "COMPOSE=1", "VARIANT=blocking"}, "--url http://127.0.0.1:8082 "},
		{[]string{"tsung", "COMPOSE=1", "VARIANT=echo-coder"}, "run.sh 127.0.0.1 8084"},
	} {
		out, err := exec.Command("make", append([]string{"-s", "-n", "-C", ".."}, c.args...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("make -n %s: %v; want a command with %q in:\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
	}
	out, err := exec.Command("make", "-s", "-n", "-C", "..", "wscat", "COMPOSE=1", "VARIANT=nope").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "VARIANT=nope is not a service of docker/compose.yaml") {
		t.Errorf("make -n wscat COMPOSE=1 VARIANT=nope: %v, %s; want an error naming VARIANT", err, out)
	}
}

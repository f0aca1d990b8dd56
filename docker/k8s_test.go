package docker

import (
	"bytes"
	"context"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/prereq"
)

// manifests is what one kustomization renders, decoded strictly into the
// Kubernetes API's own types.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	jobs        map[string]*batchv1.Job
}

func newManifests() manifests {
	return manifests{map[string]*appsv1.Deployment{}, map[string]*corev1.Service{}, map[string]*corev1.ConfigMap{}, map[string]*batchv1.Job{}}
}

// decode decodes the YAML documents of b (one manifest each) into their
// typed objects, refusing unknown fields and unknown kinds.
func decode(t *testing.T, name string, b []byte) manifests {
	t.Helper()
	m := newManifests()
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Errorf("%s, document %d: %v", name, i+1, err)
			continue
		}
		strict := func(obj any) bool {
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Errorf("%s, document %d (%s): %v", name, i+1, head.Kind, err)
				return false
			}
			return true
		}
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			keep(m.deployments, strict)
		case "v1 Service":
			keep(m.services, strict)
		case "v1 ConfigMap":
			keep(m.configMaps, strict)
		case "batch/v1 Job":
			keep(m.jobs, strict)
		default:
			t.Errorf("%s, document %d: %s %s is not a kind this test knows", name, i+1, head.APIVersion, head.Kind)
		}
	}
	return m
}

// keep decodes a new T with strict and, when it decodes, files it in
// into by its name.
func keep[T any, P interface {
	*T
	GetName() string
}](into map[string]P, strict func(obj any) bool) {
	obj := P(new(T))
	if strict(obj) {
		into[obj.GetName()] = obj
	}
}

// kustomizations are the directories under k8s/ with a kustomization.
func kustomizations(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir("k8s", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return err
	})
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no kustomization under k8s/: %v", err)
	}
	return dirs
}

// render is kubectl kustomize dir, decoded.
func render(t *testing.T, dir string) manifests {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	prereq.Need(t, "kubectl (1.32, with kustomize built in)", err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderrOf(err))
	}
	return decode(t, "kubectl kustomize "+dir, out)
}

// TestK8sManifestsDecode: every manifest file, and every kustomization as
// kubectl renders it, decodes strictly into the typed API objects.
func TestK8sManifestsDecode(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir("k8s", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" || d.Name() == "kustomization.yaml" {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil {
			decode(t, path, b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range kustomizations(t) {
		if m := render(t, dir); len(m.deployments)+len(m.jobs) == 0 {
			t.Errorf("%s renders no workload", dir)
		}
	}
}

// TestK8sCrossCheck: what the manifests say of the binaries holds in the
// binaries: every target's flags and KG_ twins parse with knowngood's own
// flag table, and its ports are the ones it listens on; every loadgen's
// args parse with its scenario's flags, its shards are the Job's pods,
// and it dials Services that exist with those ports; the Services select
// pods with the ports they name; nginx waits for as many replicas as
// there are, balances over the replicas' Service, and its configuration
// is what scripts/cluster.sh makes.
func TestK8sCrossCheck(t *testing.T) {
	t.Parallel()
	rendered := map[string]manifests{}
	for _, dir := range kustomizations(t) {
		rendered[dir] = render(t, dir)
	}
	for dir, m := range rendered {
		t.Run(dir, func(t *testing.T) {
			// A load kustomization runs against its sibling cluster's Services.
			services := m.services
			if len(m.jobs) > 0 {
				services = rendered[filepath.Join(filepath.Dir(dir), "cluster")].services
			}
			for name, d := range m.deployments {
				checkPods(t, "deployment/"+name, d.Spec.Template, m, services)
			}
			for name, j := range m.jobs {
				checkPods(t, "job/"+name, j.Spec.Template, m, services)
				checkLoadJob(t, name, j, services, rendered[filepath.Join(filepath.Dir(dir), "cluster")])
			}
			for name, s := range m.services {
				checkService(t, name, s, m)
			}
			if front, ok := m.deployments["knowngood-front"]; ok {
				checkFront(t, front, m)
			}
		})
	}
}

// envOf is a container's env as a map (values given literally).
func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// checkPods checks each container of a pod template by what it runs.
func checkPods(t *testing.T, what string, pod corev1.PodTemplateSpec, m manifests, services map[string]*corev1.Service) {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		if !strings.HasPrefix(c.Image, "ghcr.io/knowngood/knowngood:") {
			continue
		}
		switch {
		case len(c.Command) == 0:
			checkTarget(t, what, pod, c)
		case c.Command[0] == "/loadgen":
			checkLoadgen(t, what, c, services)
		default:
			t.Errorf("%s runs %q: the image holds /knowngood (its entrypoint) and /loadgen", what, c.Command)
		}
	}
}

// checkTarget: the flags and twins parse, and the ports, probes and the
// Prometheus annotation are the target's listeners.
func checkTarget(t *testing.T, what string, pod corev1.PodTemplateSpec, c corev1.Container) {
	t.Helper()
	env := envOf(c)
	flags := config.Default().Effective()
	for name := range env {
		if !strings.HasPrefix(name, "KG_") {
			continue
		}
		known := false
		for flag := range flags {
			known = known || config.EnvName(flag) == name
		}
		if !known {
			t.Errorf("%s: %s is no flag's twin (knowngood -h)", what, name)
		}
	}
	cfg, err := config.Parse(c.Args, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Errorf("%s: knowngood refuses its flags and env: %v", what, err)
		return
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, addr := range map[string]string{"target": cfg.Addr, "admin": cfg.AdminAddr} {
		_, port, _ := net.SplitHostPort(addr)
		if strconv.Itoa(int(ports[name])) != port {
			t.Errorf("%s: containerPort %q is %d; the target listens on %s", what, name, ports[name], addr)
		}
	}
	for probe, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port.String() != "admin" {
			t.Errorf("%s: the %s probe is not GET /health on the admin port: %+v", what, probe, p)
		}
	}
	if got := pod.Annotations["prometheus.io/port"]; got != strconv.Itoa(int(ports["admin"])) {
		t.Errorf("%s: prometheus.io/port %q, want the admin port %d", what, got, ports["admin"])
	}
}

// loadgenFlags parse a loadgen scenario's args (after the scenario name).
var loadgenFlags = map[string]func([]string) error{
	"conns": func(args []string) error { _, err := conns.ParseFlags(args); return err },
}

// expandRefs replaces $(NAME) in args as the kubelet does, with a sample
// value for each env NAME of the container ("0": a Job's first index).
func expandRefs(args []string, c corev1.Container) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, e := range c.Env {
			a = strings.ReplaceAll(a, "$("+e.Name+")", "0")
		}
		out[i] = a
	}
	return out
}

// flagValue is the value of -name in args ("" if absent).
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "-"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// checkLoadgen: the scenario's flags parse, and -url and -admin name
// Services with those ports.
func checkLoadgen(t *testing.T, what string, c corev1.Container, services map[string]*corev1.Service) {
	t.Helper()
	if len(c.Args) == 0 {
		t.Errorf("%s: loadgen without a scenario", what)
		return
	}
	parse, ok := loadgenFlags[c.Args[0]]
	if !ok {
		t.Errorf("%s: loadgen %s is not a scenario this test parses", what, c.Args[0])
		return
	}
	args := expandRefs(c.Args[1:], c)
	if err := parse(args); err != nil {
		t.Errorf("%s: loadgen %s refuses %q: %v", what, c.Args[0], args, err)
	}
	for _, flag := range []string{"url", "admin"} {
		u, err := url.Parse(strings.TrimPrefix(flagValue(args, flag), "dns+"))
		if err != nil || u.Host == "" {
			t.Errorf("%s: -%s %q is not a URL", what, flag, flagValue(args, flag))
			continue
		}
		s, ok := services[u.Hostname()]
		if !ok {
			t.Errorf("%s: -%s names %s, not a Service of its cluster", what, flag, u.Hostname())
			continue
		}
		if !servesPort(s, u.Port()) {
			t.Errorf("%s: -%s %s: Service %s has no port %s", what, flag, u, s.Name, u.Port())
		}
		if flag == "admin" && strings.HasPrefix(flagValue(args, flag), "dns+") && s.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("%s: -admin dns+ needs a headless Service, one address per replica; %s has a cluster IP", what, s.Name)
		}
	}
}

func servesPort(s *corev1.Service, port string) bool {
	for _, p := range s.Spec.Ports {
		if strconv.Itoa(int(p.Port)) == port {
			return true
		}
	}
	return false
}

// checkLoadJob: the shards are the Job's pods, all running at once, and
// the connections fit in what the cluster's replicas hold (-max-conns).
func checkLoadJob(t *testing.T, name string, j *batchv1.Job, services map[string]*corev1.Service, cluster manifests) {
	t.Helper()
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion || j.Spec.Completions == nil || j.Spec.Parallelism == nil {
		t.Errorf("job/%s: want an Indexed Job with completions and parallelism", name)
		return
	}
	pods := int(*j.Spec.Completions)
	if int(*j.Spec.Parallelism) != pods {
		t.Errorf("job/%s: parallelism %d, completions %d: every shard must run at once", name, *j.Spec.Parallelism, pods)
	}
	c := j.Spec.Template.Spec.Containers[0]
	shard := flagValue(c.Args, "shard")
	if want := "$(JOB_COMPLETION_INDEX)+1/" + strconv.Itoa(pods); shard != want {
		t.Errorf("job/%s: -shard %q, want %q: one shard per pod", name, shard, want)
	}
	n, _ := strconv.Atoi(flagValue(c.Args, "n"))
	replicas := cluster.deployments["knowngood"]
	if replicas == nil || replicas.Spec.Replicas == nil {
		t.Errorf("job/%s: its cluster has no deployment/knowngood", name)
		return
	}
	maxConns, _ := strconv.Atoi(envOf(replicas.Spec.Template.Spec.Containers[0])["KG_MAX_CONNS"])
	if capacity := int(*replicas.Spec.Replicas) * maxConns; n > capacity {
		t.Errorf("job/%s: -n %d, but %d replicas of -max-conns %d hold %d", name, n, *replicas.Spec.Replicas, maxConns, capacity)
	}
}

// checkService: the Service selects some pod of the render, and every
// targetPort it names is a port of that pod.
func checkService(t *testing.T, name string, s *corev1.Service, m manifests) {
	t.Helper()
	for _, d := range m.deployments {
		pod := d.Spec.Template
		if !selects(s.Spec.Selector, pod.Labels) {
			continue
		}
		ports := map[string]bool{}
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				ports[p.Name] = true
			}
		}
		for _, p := range s.Spec.Ports {
			if !ports[p.TargetPort.String()] {
				t.Errorf("service/%s: targetPort %s is not a port of deployment/%s", name, p.TargetPort.String(), d.Name)
			}
		}
		return
	}
	t.Errorf("service/%s selects no pod here (%v)", name, s.Spec.Selector)
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// checkFront: nginx waits for every replica, balances over the replicas'
// Service on its target port, and runs the configuration
// scripts/cluster.sh makes from nginx.env.
func checkFront(t *testing.T, front *appsv1.Deployment, m manifests) {
	t.Helper()
	replicas := m.deployments["knowngood"]
	if replicas == nil || replicas.Spec.Replicas == nil {
		t.Fatal("no deployment/knowngood beside the front")
	}
	inits := front.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || envOf(inits[0])["REPLICAS"] != strconv.Itoa(int(*replicas.Spec.Replicas)) {
		t.Errorf("the front waits for REPLICAS %v; deployment/knowngood has %d replicas", inits, *replicas.Spec.Replicas)
	}
	var conf string
	for name, c := range m.configMaps {
		if strings.HasPrefix(name, "knowngood-nginx-") {
			conf = c.Data["nginx.conf"]
		}
	}
	env, err := os.ReadFile("k8s/cluster/nginx.env")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../scripts/cluster.sh", "conf")
	cmd.Env = append(os.Environ(), strings.Fields(string(env))...)
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/cluster.sh conf: %v\n%s", err, stderrOf(err))
	}
	if conf != string(want) {
		t.Errorf("the front's nginx.conf is not what scripts/cluster.sh conf makes with k8s/cluster/nginx.env: run make k8s-nginx-conf")
	}
	upstream := regexp.MustCompile(`(?m)^\s*server ([a-z0-9-]+):([0-9]+);`).FindAllStringSubmatch(conf, -1)
	if len(upstream) != 1 {
		t.Fatalf("the front balances over %v; want the replicas' Service alone", upstream)
	}
	s := m.services[upstream[0][1]]
	if s == nil || s.Spec.ClusterIP != corev1.ClusterIPNone || !servesPort(s, upstream[0][2]) || !selects(s.Spec.Selector, replicas.Spec.Template.Labels) {
		t.Errorf("the front's upstream %s:%s is not a headless Service of the replicas with that port", upstream[0][1], upstream[0][2])
	}
	if !bytes.Contains(want, []byte("least_conn;")) {
		t.Errorf("the front does not balance least_conn (WebSocket-only clients)")
	}
}

// TestK8sDocs: the commands of the README's Kubernetes section name
// kustomizations that exist and objects they render: every `-k DIR`, and
// every job/, deployment/, svc/ and job-name= in them.
func TestK8sDocs(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## On Kubernetes\n")
	if !ok {
		t.Fatal("README.md has no section On Kubernetes")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	all := newManifests()
	for _, dir := range kustomizations(t) {
		m := render(t, dir)
		for k, v := range m.deployments {
			all.deployments[k] = v
		}
		for k, v := range m.services {
			all.services[k] = v
		}
		for k, v := range m.jobs {
			all.jobs[k] = v
		}
	}
	refs := 0
	for _, m := range regexp.MustCompile("-k (docker/k8s/[a-z0-9/-]*[a-z0-9])").FindAllStringSubmatch(section, -1) {
		refs++
		if _, err := os.Stat(filepath.Join(strings.TrimPrefix(m[1], "docker/"), "kustomization.yaml")); err != nil {
			t.Errorf("the README applies %s, which is no kustomization", m[1])
		}
	}
	for _, m := range regexp.MustCompile("(?:`|\\s)(job|deployment|svc)/([a-z0-9-]+)|job-name=([a-z0-9-]+)").FindAllStringSubmatch(section, -1) {
		refs++
		kind, name := m[1], m[2]
		if m[3] != "" {
			kind, name = "job", m[3]
		}
		var found bool
		switch kind {
		case "job":
			_, found = all.jobs[name]
		case "deployment":
			_, found = all.deployments[name]
		case "svc":
			_, found = all.services[name]
		}
		if !found {
			t.Errorf("the README names %s/%s, which no kustomization here renders", kind, name)
		}
	}
	if refs < 5 {
		t.Errorf("the README's Kubernetes commands name %d kustomizations and objects; the test finds too few to check", refs)
	}
}

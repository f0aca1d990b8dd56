// Package harness starts the knowngood binary for the end-to-end tests,
// the docker and recipe tests, the benchmarks and the soak: it builds the
// binary once per process, starts it on free loopback ports, waits until
// /health answers, reads /stats, and stops it with SIGTERM (SIGKILL after a
// timeout). Tests get a process that stops itself when the test ends
// (Start); programs stop theirs (StartKnowngood, StartProcess).
package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// builds holds the binaries built by this process, in one temporary
// directory that RemoveBuilds deletes.
var builds struct {
	mu    sync.Mutex
	dir   string
	paths map[string]string // package (./servers/knowngood) to binary
}

// Knowngood is the path of the knowngood binary, built from this module's
// ./servers/knowngood on the first call.
func Knowngood() (string, error) { return build("./servers/knowngood", "knowngood") }

// Loadgen is the path of the loadgen binary, built from ./loadgen on the
// first call.
func Loadgen() (string, error) { return build("./loadgen", "loadgen") }

// Build is the path of another main package of the module (pkg, such as
// ./scripts/bench/floors/sioserver), built as name on the first call and
// deleted by RemoveBuilds with the others.
func Build(pkg, name string) (string, error) { return build(pkg, name) }

// BuildModfile is Build against another go.mod file of the module (go
// build -modfile, with its .sum beside it): the same package at other
// versions of its dependencies, such as a client library at the version
// a report used.
func BuildModfile(pkg, name, modfile string) (string, error) {
	return build(pkg, name, "-modfile="+modfile)
}

// Floor is the path of the minimal WebSocket echo server on library lib
// alone that lib's targets are measured against, built from
// ./scripts/bench/floors/LIBecho on the first call.
func Floor(lib string) (string, error) {
	return Build("./scripts/bench/floors/"+lib+"echo", lib+"echo")
}

// KnowngoodT is Knowngood for a test, which fails if the build does.
func KnowngoodT(t testing.TB) string {
	t.Helper()
	bin, err := Knowngood()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// LoadgenT is Loadgen for a test.
func LoadgenT(t testing.TB) string {
	t.Helper()
	bin, err := Loadgen()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// RemoveBuilds deletes the binaries built so far; the next call to
// Knowngood or Loadgen builds again. A TestMain calls it after m.Run.
func RemoveBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.dir, builds.paths = "", nil
}

// BinDirEnv names a directory of binaries built beforehand, one per
// command, named as go build -o DIR/ names them (knowngood, loadgen). make
// test builds the commands there once, so that each test package, a
// process of its own, starts them instead of linking them again; a test
// run without it builds its own.
const BinDirEnv = "KNOWNGOOD_TEST_BINDIR"

// prebuilt is the binary of pkg in BinDirEnv's directory, if it has one
// by the package's own name.
func prebuilt(pkg, name string) (string, bool) {
	dir := os.Getenv(BinDirEnv)
	if dir == "" || path.Base(pkg) != name {
		return "", false
	}
	bin := filepath.Join(dir, name)
	fi, err := os.Stat(bin)
	return bin, err == nil && fi.Mode().IsRegular()
}

// build compiles pkg of the module into the temporary directory, once.
// CGO_ENABLED=0 makes the static binary that the Docker image also runs.
func build(pkg, name string, flags ...string) (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	key := strings.Join(append([]string{pkg}, flags...), " ")
	if p, ok := builds.paths[key]; ok {
		return p, nil
	}
	if bin, ok := prebuilt(pkg, name); ok && len(flags) == 0 {
		if builds.paths == nil {
			builds.paths = map[string]string{}
		}
		builds.paths[key] = bin
		return bin, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if builds.dir == "" {
		if builds.dir, err = os.MkdirTemp("", "knowngood-harness"); err != nil {
			return "", err
		}
		builds.paths = map[string]string{}
	}
	bin := filepath.Join(builds.dir, name)
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s %s: %v\n%s", strings.Join(flags, " "), pkg, err, out)
	}
	builds.paths[key] = bin
	return bin, nil
}

// moduleRoot is the directory of the go.mod of the working directory's
// module, so that a test in any package builds the same binary and runs
// the same scripts; asked of go once a process.
var moduleRoot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the knowngood module")
	}
	return filepath.Dir(mod), nil
})

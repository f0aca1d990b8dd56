// Package crossbuild keeps knowngood building where its releases run: it
// builds and vets the module for macOS and Windows (tests included, so that
// a Mac can run them), checks the release archives make dist writes, and
// the target list make help prints. A Linux-only symbol (a socket option,
// an ioctl, an errno table) outside a build-tagged file fails here with
// its package and name, instead of in a user's go install.
package crossbuild

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// targets are the platforms besides Linux, and the packages meant to be
// vetted, tests included, on each (patterns relative to the module root).
// Every package builds everywhere (go build ./... on Windows too: a tool
// that needs a Linux-only figure says so when it runs), but the docker
// tests drive a Docker engine on the host network and the scripts' tests
// are Linux tooling (rlimits, signals to process groups): on Windows only
// the commands and the packages under them are vetted with their tests.
var targets = []struct {
	goos, goarch string
	pkgs         []string
	skip         []string // packages left out of vet, by import path prefix
}{
	// One architecture per system: no file in the module is chosen by
	// architecture, and TestDist builds both commands for arm64 too.
	{"darwin", "amd64", []string{"./..."}, []string{"github.com/knowngood/knowngood/docker"}},
	{"windows", "amd64", []string{"./servers/...", "./shared/...", "./loadgen/..."}, nil},
}

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// goCmd runs go with args in dir for goos/goarch and returns its output.
func goCmd(dir, goos, goarch string, args ...string) ([]byte, error) {
	return goCommand(dir, goos, goarch, args...).CombinedOutput()
}

func goCommand(dir, goos, goarch string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
	return cmd
}

// packages lists the module's packages for goos/goarch once: all of them
// with non-test files for build (go build refuses a package of tests
// only), and for vet those that patterns match, less the skipped ones.
// One go list of ./... serves both: loading the module is most of what a
// go list costs, and a pattern ./dir/... is matched here as the go command
// matches it, dir and every package below.
func packages(t *testing.T, dir, goos, goarch string, patterns, skip []string) (build, vet []string) {
	t.Helper()
	// Only stdout is the list: on stderr the go command may say that it
	// is downloading a module only this platform needs.
	cmd := goCommand(dir, goos, goarch, "list", "-e", "-f", "{{.Module.Path}}:{{.ImportPath}}:{{len .GoFiles}}", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s/%s: %v\n%s%s", goos, goarch, err, out, stderr.Bytes())
	}
	for line := range strings.FieldsSeq(string(out)) {
		f := strings.Split(line, ":")
		if len(f) != 3 {
			t.Fatalf("go list %s/%s printed %q", goos, goarch, line)
		}
		mod, p, files := f[0], f[1], f[2]
		if files != "0" {
			build = append(build, p)
		}
		left := !matches(t, mod, p, patterns)
		for _, s := range skip {
			left = left || p == s || strings.HasPrefix(p, s+"/")
		}
		if !left {
			vet = append(vet, p)
		}
	}
	return build, vet
}

// matches reports whether the package path p of module mod is matched by
// one of patterns, each ./... or ./dir/... (relative to the module root).
func matches(t *testing.T, mod, p string, patterns []string) bool {
	for _, pat := range patterns {
		rel, ok := strings.CutSuffix(strings.TrimPrefix(pat, "./"), "...")
		if !ok || !strings.HasPrefix(pat, "./") {
			t.Fatalf("pattern %s: want ./... or ./dir/...", pat)
		}
		base := strings.TrimSuffix(mod+"/"+rel, "/")
		if p == base || strings.HasPrefix(p, base+"/") {
			return true
		}
	}
	return false
}

func TestMatches(t *testing.T) {
	t.Parallel()
	const mod = "example.com/m"
	for _, c := range []struct {
		p    string
		pats []string
		want bool
	}{
		{"example.com/m", []string{"./..."}, true},
		{"example.com/m/a/b", []string{"./..."}, true},
		{"example.com/m/servers", []string{"./servers/..."}, true},
		{"example.com/m/servers/x", []string{"./shared/...", "./servers/..."}, true},
		{"example.com/m/serversx", []string{"./servers/..."}, false},
		{"example.com/m/scripts/x", []string{"./servers/...", "./loadgen/..."}, false},
	} {
		if got := matches(t, mod, c.p, c.pats); got != c.want {
			t.Errorf("matches(%s, %v) = %v, want %v", c.p, c.pats, got, c.want)
		}
	}
}

// TestCrossBuild compiles every package for macOS and Windows and vets
// those meant to be tested there, the two platforms side by side: each
// platform's go commands are processes of their own, which wait on
// loading the module and on the build cache as much as they compute.
//
// go list -export runs the compiler on each package, main packages
// included, as go build does, but links none: linking the module's
// seventeen commands twice took half a minute warm and finds nothing the
// compiler does not, since no file is assembly or linkname. The two
// commands a release ships are linked for every platform by TestDist.
// -trimpath is make dist's flag: the compiled packages are then the ones
// TestDist's build finds in the build cache, instead of a second compile.
// go vet compiles only the dependencies of what it vets, not the vetted
// packages themselves: the compile is a step of its own.
func TestCrossBuild(t *testing.T) {
	t.Parallel()
	dir := root(t)
	for _, tg := range targets {
		t.Run(tg.goos+"-"+tg.goarch, func(t *testing.T) {
			t.Parallel()
			build, vet := packages(t, dir, tg.goos, tg.goarch, tg.pkgs, tg.skip)
			// vet type-checks the tests too.
			for _, step := range []struct {
				args []string
				pkgs []string
			}{{[]string{"list", "-export", "-trimpath", "-f", "{{.ImportPath}}"}, build}, {[]string{"vet", "-trimpath"}, vet}} {
				if out, err := goCmd(dir, tg.goos, tg.goarch, append(step.args, step.pkgs...)...); err != nil {
					t.Errorf("GOOS=%s GOARCH=%s go %s: %v\n%s%s", tg.goos, tg.goarch, strings.Join(step.args, " "), err, explain(out), out)
				}
			}
		})
	}
}

// undefined matches the compiler's and vet's report of a symbol the
// platform's syscall or x/sys/unix does not have.
var undefined = regexp.MustCompile(`(?m)^(?:vet: )?([^\s:]+\.go):(\d+):\d+: undefined: ((?:unix|syscall|windows)\.\w+)`)

// explain names each platform-only symbol found in out, and where.
func explain(out []byte) string {
	var b strings.Builder
	for _, m := range undefined.FindAllSubmatch(out, -1) {
		file, line, sym := string(m[1]), string(m[2]), string(m[3])
		fmt.Fprintf(&b, "package %s uses %s (%s:%s), which this platform does not have: move it to a build-tagged file (name_linux.go, name_unix.go) with a fallback for the others\n",
			filepath.Dir(file), sym, file, line)
	}
	return b.String()
}

func TestExplain(t *testing.T) {
	t.Parallel()
	out := []byte("# github.com/knowngood/knowngood/servers/internal/wsserver\nservers/internal/wsserver/gnettls.go:51:66: undefined: unix.SOCK_CLOEXEC\nvet: servers/internal/lifecycle/x_test.go:9:2: undefined: syscall.Kill\n")
	got := explain(out)
	for _, want := range []string{"package servers/internal/wsserver uses unix.SOCK_CLOEXEC (servers/internal/wsserver/gnettls.go:51)", "package servers/internal/lifecycle uses syscall.Kill"} {
		if !strings.Contains(got, want) {
			t.Errorf("explain: %q, want it to contain %q", got, want)
		}
	}
}

// TestDist runs make dist's program into a temporary directory: six
// archives (tar.gz, zip for Windows), SHA256SUMS that sha256sum -c accepts,
// and in each both binaries, for the archive's platform, with the module's
// build information that go version -m and -version read. The archives are
// checked and unpacked with the tools a user has (sha256sum, tar, unzip):
// about 90 MB of gzip and SHA-256 in this race-instrumented test binary
// took half a minute of CPU.
func TestDist(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cross-compiles the release; not in -short")
	}
	for _, tool := range []string{"sha256sum", "tar", "unzip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (make deps installs it)", tool, err)
		}
	}
	dir := root(t)
	out := t.TempDir()
	cmd := exec.Command("go", "run", "./scripts/dist", "-out", out, "-version", "test")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/dist: %v\n%s", err, b)
	}
	platforms := []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}
	checkSums(t, out, len(platforms))
	// The go command finds a repository by its .git directory: in a git
	// worktree (.git is a file) it stamps no commit.
	fi, err := os.Stat(filepath.Join(dir, ".git"))
	stamped := err == nil && fi.IsDir()
	for _, p := range platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		top := fmt.Sprintf("knowngood-test-%s-%s", goos, goarch)
		unpack := exec.Command("tar", "-xzf", filepath.Join(out, top+".tar.gz"))
		exe := ""
		if goos == "windows" {
			unpack, exe = exec.Command("unzip", "-q", filepath.Join(out, top+".zip")), ".exe"
		}
		files := t.TempDir()
		unpack.Dir = files
		if b, err := unpack.CombinedOutput(); err != nil {
			t.Errorf("%s: %v: %v\n%s", p, unpack.Args, err, b)
			continue
		}
		for _, name := range []string{"README.md", "knowngood" + exe, "loadgen" + exe} {
			if _, err := os.Stat(filepath.Join(files, top, name)); err != nil {
				t.Errorf("%s: no %s/%s in the archive: %v", p, top, name, err)
			}
		}
		for _, cmd := range []string{"knowngood", "loadgen"} {
			checkBuildInfo(t, filepath.Join(files, top, cmd+exe), cmd, goos, goarch, stamped)
		}
	}
}

// checkSums runs sha256sum -c over dir's SHA256SUMS, which must list n
// archives.
func checkSums(t *testing.T, dir string, n int) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(sums), "\n"); got != n {
		t.Errorf("SHA256SUMS lists %d archives, want %d:\n%s", got, n, sums)
	}
	check := exec.Command("sha256sum", "-c", "--strict", "SHA256SUMS")
	check.Dir = dir
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, b)
	}
}

// checkBuildInfo reads path's build information with go version -m.
func checkBuildInfo(t *testing.T, path, cmd, goos, goarch string, stamped bool) {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", path).CombinedOutput()
	if err != nil {
		t.Errorf("go version -m %s: %v\n%s", path, err, out)
		return
	}
	info := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && (f[0] == "path" || f[0] == "mod"):
			info[f[0]] = f[1]
		case len(f) >= 2 && f[0] == "build":
			k, v, _ := strings.Cut(f[1], "=")
			info[k] = v
		}
	}
	want := map[string]string{"mod": "github.com/knowngood/knowngood", "GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "0"}
	if stamped {
		want["vcs"] = "git"
	}
	for k, want := range want {
		if info[k] != want {
			t.Errorf("%s: %s %q, want %q\n%s", filepath.Base(path), k, info[k], want, out)
		}
	}
	if !strings.HasSuffix(info["path"], "/"+cmd) || (stamped && info["vcs.revision"] == "") {
		t.Errorf("%s: path %q, vcs.revision %q; want .../%s and a commit\n%s", filepath.Base(path), info["path"], info["vcs.revision"], cmd, out)
	}
}

// TestMakeHelp: make help prints every target that has a "## name: text"
// line in the Makefile, with its text.
func TestMakeHelp(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := root(t)
	makefile, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "help")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	n := 0
	for line := range strings.Lines(string(makefile)) {
		rest, ok := strings.CutPrefix(line, "## ")
		name, text, ok2 := strings.Cut(strings.TrimSpace(rest), ": ")
		if !ok || !ok2 {
			continue
		}
		n++
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + `\s+` + regexp.QuoteMeta(text) + `$`).Match(out) {
			t.Errorf("make help has no line for %s (%q)", name, text)
		}
	}
	if n < 10 {
		t.Errorf("found %d ## lines in the Makefile; the pattern is wrong", n)
	}
	for _, target := range []string{"build", "dist", "docker", "help", "test"} {
		if !regexp.MustCompile(`(?m)^\s+` + target + `\s`).Match(out) {
			t.Errorf("make help does not list %s:\n%s", target, out)
		}
	}
}

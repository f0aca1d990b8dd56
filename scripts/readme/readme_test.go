package readme

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/prereq"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// root is the repository, from this package's directory.
const root = "../.."

// maxReadmeLines is where the front door stops being one: what a user
// needs in five minutes fits in about 200 lines, the rest is a link away.
const maxReadmeLines = 250

func TestReadmeLength(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte("\n")); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; keep it at most %d and move the rest next to what it documents", n, maxReadmeLines)
	}
}

// mdFile is one Markdown file: its path from the root and its lines.
type mdFile struct {
	path  string
	lines []string
}

// markdownFiles is every *.md of the repository: tracked or new, not
// ignored (git ls-files), or, without git, every one under the root but
// node_modules and .git.
func markdownFiles(t *testing.T) []mdFile {
	t.Helper()
	var paths []string
	out, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "--", "*.md").Output()
	if err == nil {
		for _, p := range strings.Fields(string(out)) {
			if !strings.Contains(p, "node_modules/") {
				paths = append(paths, p)
			}
		}
	} else {
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(p, ".md") {
				rel, _ := filepath.Rel(root, p)
				paths = append(paths, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var files []mdFile
	for _, p := range paths {
		raw, err := os.ReadFile(filepath.Join(root, p))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, mdFile{p, strings.Split(string(raw), "\n")})
	}
	if len(files) == 0 {
		t.Fatal("no Markdown file found")
	}
	return files
}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan = regexp.MustCompile("`([^`]+)`")
	makeCmd  = regexp.MustCompile(`(?:^|[\s(;|&])make ((?:[A-Za-z_]+=\S*\s+)*)([a-z][a-z0-9-]*)(?:$|[^\w*.-])`)
	goDoc    = regexp.MustCompile(`go doc (\./[\w./-]*)`)
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// code is what a Markdown file shows as code: the lines of its fenced
// blocks and its code spans, each with its line number.
func code(f mdFile) (out []struct {
	line int
	text string
}) {
	add := func(line int, text string) {
		out = append(out, struct {
			line int
			text string
		}{line, text})
	}
	fenced := false
	for i, l := range f.lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			add(i+1, l)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(l, -1) {
			add(i+1, m[1])
		}
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces to hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors is every heading anchor of f, numbered as GitHub does when two
// headings make the same one.
func anchors(f mdFile) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fenced := false
	for _, l := range f.lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
		}
		m := heading.FindStringSubmatch(l)
		if fenced || m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestLinks(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	byPath := map[string]mdFile{}
	anchorsOf := map[string]map[string]bool{}
	for _, f := range files {
		byPath[f.path] = f
	}
	for _, f := range files {
		for i, l := range f.lines {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := f.path
				if file != "" {
					path = filepath.Join(filepath.Dir(f.path), file)
					if _, err := os.Stat(filepath.Join(root, path)); err != nil {
						t.Errorf("%s:%d: link to %s: %v", f.path, i+1, target, err)
						continue
					}
				}
				if frag == "" {
					continue
				}
				g, ok := byPath[filepath.Clean(path)]
				if !ok {
					continue // an anchor in a file that is not Markdown
				}
				a, ok := anchorsOf[g.path]
				if !ok { // each file's anchors once, not once a link
					a = anchors(g)
					anchorsOf[g.path] = a
				}
				if !a[frag] {
					t.Errorf("%s:%d: link to %s: %s has no heading with anchor #%s", f.path, i+1, target, g.path, frag)
				}
			}
		}
	}
}

// notPaths are words shaped like a path that name something else.
var notPaths = map[string]bool{
	"k6/ws": true, // k6's WebSocket module
}

// pathWord is w as a repository path, or "" when w is not one: a word with
// a slash whose first element is an entry of the root or of dir.
func pathWord(w string) string {
	w = strings.Trim(w, `"'(),;:.[]`)
	w = strings.TrimPrefix(w, "./")
	if w == "" || !strings.Contains(w, "/") || notPaths[w] ||
		strings.Contains(w, "://") || strings.ContainsAny(w, "=@$<>{}:") || strings.HasPrefix(w, "/") ||
		strings.HasPrefix(w, "-") || strings.HasPrefix(w, "~") || strings.Contains(w, "...") {
		return ""
	}
	return w
}

func TestPaths(t *testing.T) {
	t.Parallel()
	for _, f := range markdownFiles(t) {
		dir := filepath.Dir(f.path)
		for _, c := range code(f) {
			for _, w := range strings.Fields(c.text) {
				p := pathWord(w)
				if p == "" {
					continue
				}
				first := strings.Split(p, "/")[0]
				if first == "bin" || first == "dist" {
					continue // what make build, make dist and make test write, there or not
				}
				var bases []string
				for _, base := range []string{".", dir} {
					if _, err := os.Stat(filepath.Join(root, base, first)); err == nil {
						bases = append(bases, base)
					}
				}
				if len(bases) == 0 {
					continue // not a path of this repository (a module, a URL path)
				}
				found := false
				for _, base := range bases {
					if m, _ := filepath.Glob(filepath.Join(root, base, p)); len(m) > 0 {
						found = true
					}
				}
				if !found {
					t.Errorf("%s:%d: %s does not exist", f.path, c.line, p)
				}
			}
		}
	}
}

// makeTargets are the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`^([A-Za-z0-9][\w.-]*(?:[ \t]+[A-Za-z0-9][\w.-]*)*)[ \t]*:([^=]|$)`)
	out := map[string]bool{}
	for _, l := range strings.Split(string(raw), "\n") {
		if m := rule.FindStringSubmatch(l); m != nil {
			for _, name := range strings.Fields(m[1]) {
				out[name] = true
			}
		}
	}
	return out
}

func TestMakeAndGoDoc(t *testing.T) {
	t.Parallel()
	targets := makeTargets(t)
	for _, f := range markdownFiles(t) {
		for _, c := range code(f) {
			for _, m := range makeCmd.FindAllStringSubmatch(c.text, -1) {
				if !targets[m[2]] {
					t.Errorf("%s:%d: make %s: the Makefile has no such target", f.path, c.line, m[2])
				}
			}
			for _, m := range goDoc.FindAllStringSubmatch(c.text, -1) {
				pkg := strings.TrimRight(m[1], ".,;:)")
				goFiles, _ := filepath.Glob(filepath.Join(root, pkg, "*.go"))
				if len(goFiles) == 0 {
					t.Errorf("%s:%d: go doc %s: no Go package there", f.path, c.line, pkg)
				}
			}
		}
	}
}

// block is a fenced block of README.md marked runnable: its commands, a
// command continued with a backslash on one line, comment lines left out,
// and the exit statuses its commands may end with: 0, or the list of the
// marker's exit= ("<!-- runnable exit=0,1 -->" for an example whose point
// is a failed run).
type block struct {
	line int
	cmds []string
	exit map[int]bool
}

var runnableMark = regexp.MustCompile(`^<!-- runnable(?: exit=([0-9]+(?:,[0-9]+)*))? -->$`)

func runnableBlocks(t *testing.T) []block {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var out []block
	for i := 0; i+1 < len(lines); i++ {
		mark := runnableMark.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if mark == nil {
			if strings.Contains(lines[i], "runnable") && strings.HasPrefix(strings.TrimSpace(lines[i]), "<!--") {
				t.Fatalf("README.md:%d: %q: want <!-- runnable --> or <!-- runnable exit=0,1 -->", i+1, lines[i])
			}
			continue
		}
		if !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("README.md:%d: <!-- runnable --> is not followed by a fenced block", i+1)
		}
		b := block{line: i + 2, exit: map[int]bool{0: true}}
		if mark[1] != "" {
			b.exit = map[int]bool{}
			for _, c := range strings.Split(mark[1], ",") {
				n, _ := strconv.Atoi(c)
				b.exit[n] = true
			}
		}
		cont := ""
		for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			l := strings.TrimSpace(lines[i])
			if cont == "" && (l == "" || strings.HasPrefix(l, "#")) {
				continue
			}
			if strings.HasSuffix(l, `\`) {
				cont += strings.TrimSuffix(l, `\`) + " "
				continue
			}
			b.cmds = append(b.cmds, cont+l)
			cont = ""
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		t.Fatal("README.md marks no block runnable")
	}
	return out
}

// words are a command's words before a comment, environment assignments
// left out.
func words(cmd string) []string {
	cmd, _, _ = strings.Cut(cmd, " #")
	ws := strings.Fields(cmd)
	for len(ws) > 0 && strings.Contains(ws[0], "=") && !strings.HasPrefix(ws[0], "-") {
		ws = ws[1:]
	}
	return ws
}

// toolPath is PATH with the places make deps installs the tools in: k6 in
// GOPATH/bin, artillery and wscat under scripts/.
func toolPath(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	gopath, _ := exec.Command("go", "env", "GOPATH").Output()
	return strings.Join([]string{
		os.Getenv("PATH"),
		filepath.Join(strings.TrimSpace(string(gopath)), "bin"),
		filepath.Join(abs, "scripts/artillery/node_modules/.bin"),
		filepath.Join(abs, "scripts/wscat/node_modules/.bin"),
	}, string(os.PathListSeparator))
}

// lookTool finds a command's program on path: a path is looked for from
// the root, a name on path.
func lookTool(name, path string) error {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		_, err := os.Stat(p)
		return err
	}
	for _, dir := range filepath.SplitList(path) {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return nil
		}
	}
	return fmt.Errorf("%s is not on PATH", name)
}

// needs skips (or, in CI, fails) a command whose tool or packages are
// missing. websocket-bench is never installed: it is skipped everywhere.
func needs(t *testing.T, ws []string, path string) {
	t.Helper()
	if ws[0] == "websocket-bench" {
		if lookTool(ws[0], path) != nil {
			t.Skip("websocket-bench (websocket-shootout's client) is not installed here")
		}
		return
	}
	prereq.Need(t, ws[0], lookTool(ws[0], path))
	switch {
	case ws[0] == "node":
		_, err := os.Stat(filepath.Join(root, "scripts/node_modules/socket.io-client/package.json"))
		prereq.Need(t, "the npm packages of scripts/ (make deps)", err)
	case strings.HasSuffix(ws[0], "python3"):
		prereq.Need(t, "python3-socketio for "+ws[0], exec.Command(ws[0], "-c", "import socketio, aiohttp").Run())
	}
}

// server is a `make run-server` of a runnable block, in a process group of
// its own (make, go run and the target), on free loopback ports.
type server struct {
	cmd         *exec.Cmd
	out         *harness.Output
	done        chan struct{}
	addr, admin string
}

// startServer runs cmd with the target and its admin listener on free
// loopback ports (through their environment twins: the README's command
// names neither), waits for its "listening" line and checks that both
// listeners answer. The server is stopped when the test ends.
func startServer(t *testing.T, cmd string) *server {
	t.Helper()
	s := &server{done: make(chan struct{}), out: harness.NewOutput()}
	s.cmd = exec.Command("bash", "-c", cmd)
	s.cmd.Dir = root
	s.cmd.Env = append(os.Environ(), "KG_ADDR=127.0.0.1:0", "KG_ADMIN_ADDR=127.0.0.1:0", "KG_LOG_FORMAT=json")
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.stop(t) })
	// go run builds the target first: allow for a cold build cache.
	timer := time.NewTimer(3 * time.Minute)
	defer timer.Stop()
	select {
	case l := <-s.out.Listening():
		s.addr, s.admin = l.Addr, l.AdminAddr
	case <-s.done:
		t.Fatalf("%s exited before it listened:\n%s", cmd, s.out)
	case <-timer.C:
		t.Fatalf("%s did not say it listens within 3 minutes:\n%s", cmd, s.out)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + s.admin + "/health")
	if err != nil {
		t.Fatalf("%s: /health: %v", cmd, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: /health answered %s", cmd, resp.Status)
	}
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: the target at %s: %v", cmd, s.addr, err)
	}
	c.Close()
	return s
}

// stop sends SIGTERM to the server's process group, SIGKILL after 15 s,
// and waits until no process of the group is left.
func (s *server) stop(t *testing.T) {
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	select {
	case <-s.done:
	case <-timer.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.done
		t.Errorf("the server did not stop within 15 s of SIGTERM; killed:\n%s", s.out)
	}
	// The target may outlive make and go run by a moment.
	for i := 0; i < 100 && syscall.Kill(-pgid, 0) == nil; i++ {
		if i == 50 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if syscall.Kill(-pgid, 0) == nil {
		t.Errorf("a process of the server's group %d is left", pgid)
	}
}

func (s *server) connections(t *testing.T) uint64 {
	t.Helper()
	st, err := harness.ReadStats(nil, "http://"+s.admin)
	if err != nil {
		t.Fatal(err)
	}
	return st.ConnectionsTotal
}

var (
	port8080 = regexp.MustCompile(`\b8080\b`)
	port9100 = regexp.MustCompile(`\b9100\b`)
)

// runCommand runs cmd from the root (3 minutes at most) with stdin held
// open (wscat quits when its stdin ends), in a process group that is
// killed whatever happens; it must exit with one of the statuses in exit.
func runCommand(t *testing.T, cmd, path string, exit map[int]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir = root
	c.Env = append(os.Environ(), "PATH="+path, "TMPDIR="+t.TempDir(), "ARTILLERY_DISABLE_TELEMETRY=true")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c.Stdin = r
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err = c.Start()
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // anything it left behind
	var ee *exec.ExitError
	switch {
	case err == nil && exit[0]:
	case errors.As(err, &ee) && exit[ee.ExitCode()]:
	default:
		t.Fatalf("%s: %v (want exit status %v)\n%s", cmd, err, keys(exit), tail(out.String(), 40))
	}
	t.Logf("%s: %v\n%s", cmd, err, tail(out.String(), 15))
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestRunnable runs the README's runnable blocks: each block's
// `make run-server` as a server on free ports, its other commands against
// it, each of which must exit 0 and be seen by the target (its
// connections_total grows). `make test` is what runs this test: it is
// checked with make -n only.
func TestRunnable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the README's commands against real targets")
	}
	path := toolPath(t)
	for _, b := range runnableBlocks(t) {
		t.Run(fmt.Sprintf("README.md:%d", b.line), func(t *testing.T) {
			// Each block has a server of its own, on free ports: the
			// blocks run at once. A block's commands run one after the
			// other, each then seen by the server as its own.
			t.Parallel()
			var srv *server
			for _, cmd := range b.cmds {
				ws := words(cmd)
				if len(ws) >= 2 && ws[0] == "make" && ws[1] == "run-server" {
					if srv != nil {
						t.Fatalf("two make run-server in one block: the commands' ports would be ambiguous")
					}
					srv = startServer(t, cmd)
				}
			}
			for _, cmd := range b.cmds {
				ws := words(cmd)
				switch {
				case len(ws) >= 2 && ws[0] == "make" && ws[1] == "run-server":
					continue
				case len(ws) == 2 && ws[0] == "make" && ws[1] == "test":
					if out, err := exec.Command("make", "-C", root, "-n", "test").CombinedOutput(); err != nil {
						t.Errorf("make -n test: %v\n%s", err, out)
					}
					continue
				}
				t.Run(ws[0], func(t *testing.T) {
					if srv == nil {
						t.Fatalf("%s: no make run-server in the block to run it against", cmd)
					}
					needs(t, ws, path)
					if strings.HasSuffix(ws[0], "tsung/run.sh") {
						harness.LockTsung(t)
					}
					_, port, _ := net.SplitHostPort(srv.addr)
					_, adminPort, _ := net.SplitHostPort(srv.admin)
					run := port9100.ReplaceAllString(port8080.ReplaceAllString(cmd, port), adminPort)
					before := srv.connections(t)
					runCommand(t, run, path, b.exit)
					if after := srv.connections(t); after == before {
						t.Errorf("%s: the target saw no connection", run)
					}
				})
			}
		})
	}
}

// TestWords keeps the command parsing honest.
func TestWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"make run-server VARIANT=blocking     # a target", "make run-server VARIANT=blocking"},
		{"ARTILLERY_DISABLE_TELEMETRY=true artillery run x", "artillery run x"},
		{"k6 run -e TARGET=ws://127.0.0.1:8080/ scripts/k6/ws-echo.js", "k6 run -e TARGET=ws://127.0.0.1:8080/ scripts/k6/ws-echo.js"},
	} {
		if got := strings.Join(words(c.in), " "); got != c.want {
			t.Errorf("words(%q) = %q; want %q", c.in, got, c.want)
		}
	}
	if s := slug("A cluster (`-redis`)"); s != "a-cluster--redis" {
		t.Errorf("slug = %q", s)
	}
}

// TestVariantsTable checks the variants tables of README.md and
// servers/README.md against the catalog: every variant named once, none
// that does not exist.
func TestVariantsTable(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"README.md", "servers/README.md"} {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(raw), "\n## Variants\n")
		if !ok {
			t.Fatalf(`%s has no "## Variants" section`, doc)
		}
		rest, _, _ = strings.Cut(rest, "\n## ")
		seen := map[string]int{}
		for _, l := range strings.Split(rest, "\n") {
			if !strings.HasPrefix(l, "| `") {
				continue
			}
			first := strings.Split(l, "|")[1]
			for _, m := range codeSpan.FindAllStringSubmatch(first, -1) {
				seen[m[1]]++
			}
		}
		for _, name := range variants.Names() {
			if seen[name] != 1 {
				t.Errorf("%s's variants table names %s %d times; want once", doc, name, seen[name])
			}
			delete(seen, name)
		}
		for name := range seen {
			t.Errorf("%s's variants table names %s, which is not in servers/variants", doc, name)
		}
	}
}

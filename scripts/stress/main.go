// Command stress hunts flaky tests: it runs chosen tests many times while
// a CPU hog keeps every core busy, and prints how often each test passed.
// A test that depends on timing must pass there every time: this is the
// loaded machine that CI and the users' own runs can be.
//
//	go run ./scripts/stress -n 200 ./servers/socketio:TestPollingCloseRace ./loadgen/broadcast:TestSubscribers
//
// Each PKG:REGEX is built once with -race (go test -c) and its binary run n
// times, one process a run, in the package's directory, with -test.run
// REGEX. The hog is one busy goroutine per core in this process, so it runs
// at the tests' own priority. The output of every failed run is kept in a
// file named in the report. Exit status 1 when any run failed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var failed flakeError
		if errors.As(err, &failed) {
			fmt.Fprintln(os.Stderr, "stress:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(2)
	}
}

// target is one PKG:REGEX argument.
type target struct{ pkg, run string }

type options struct {
	runs    int
	hog     int
	timeout time.Duration
	keep    string
	targets []target
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("stress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	fs.IntVar(&o.runs, "n", 20, "runs of each PKG:REGEX (one process each)")
	fs.IntVar(&o.hog, "hog", runtime.NumCPU(), "busy goroutines beside the tests (0 = none)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "-test.timeout of one run")
	fs.StringVar(&o.keep, "keep", "", "directory for the output of failed runs (default: a new temporary one)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: stress [flags] PKG:REGEX ...  (e.g. ./servers/socketio:'^TestPolling')")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.runs < 1:
		return o, fmt.Errorf("-n %d: want at least 1 run", o.runs)
	case o.hog < 0:
		return o, fmt.Errorf("-hog %d: want 0 or more goroutines", o.hog)
	case o.timeout <= 0:
		return o, fmt.Errorf("-timeout %v: want a positive duration", o.timeout)
	case fs.NArg() == 0:
		fs.Usage()
		return o, errors.New("no PKG:REGEX given")
	}
	for _, a := range fs.Args() {
		pkg, re, ok := strings.Cut(a, ":")
		if !ok || pkg == "" || re == "" {
			return o, fmt.Errorf("%q: want PKG:REGEX, e.g. ./servers/socketio:TestPollingCloseRace", a)
		}
		if _, err := regexp.Compile(re); err != nil {
			return o, fmt.Errorf("%q: %v", a, err)
		}
		o.targets = append(o.targets, target{pkg, re})
	}
	return o, nil
}

// flakeError says that some runs failed; the exit status tells it apart
// from a usage or build error.
type flakeError struct{ failed int }

func (e flakeError) Error() string { return fmt.Sprintf("%d failed runs", e.failed) }

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.keep == "" {
		if o.keep, err = os.MkdirTemp("", "knowngood-stress"); err != nil {
			return err
		}
	}
	bins, err := os.MkdirTemp("", "knowngood-stress-bin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bins)

	var tallies []*tally
	for i, tg := range o.targets {
		bin := filepath.Join(bins, fmt.Sprintf("t%d.test", i))
		fmt.Fprintf(stderr, "building %s\n", tg.pkg)
		if out, err := exec.CommandContext(ctx, "go", "test", "-race", "-c", "-o", bin, tg.pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("go test -c %s: %v\n%s", tg.pkg, err, out)
		}
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s has no tests", tg.pkg)
		}
		dir, err := packageDir(tg.pkg)
		if err != nil {
			return fmt.Errorf("go list %s: %v", tg.pkg, err)
		}
		// A mistyped REGEX would pass every run without running a test.
		list := exec.CommandContext(ctx, bin, "-test.list", tg.run)
		list.Dir = dir
		if out, err := list.Output(); err != nil || len(bytes.TrimSpace(out)) == 0 {
			return fmt.Errorf("no test in %s matches %q", tg.pkg, tg.run)
		}
		tallies = append(tallies, &tally{target: tg, bin: bin, dir: dir, passed: map[string]int{}, failed: map[string]int{}})
	}

	stopHog := hog(o.hog)
	defer stopHog()
	fmt.Fprintf(stderr, "%d runs of each, %d busy goroutines beside them\n", o.runs, o.hog)
	start := time.Now()
	for _, t := range tallies {
		for i := range o.runs {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t.runOnce(ctx, i, o, stderr)
		}
	}
	stopHog()
	report(stdout, tallies, o.runs, time.Since(start))
	if failed := sumFailed(tallies); failed > 0 {
		return flakeError{failed}
	}
	return nil
}

// hog keeps n goroutines busy until the returned function is called.
func hog(n int) (stop func()) {
	var done atomic.Bool
	for range n {
		go func() {
			for x := 0; !done.Load(); x++ {
				_ = x
			}
		}()
	}
	return func() { done.Store(true) }
}

// tally counts one target's runs and the top-level tests in them.
type tally struct {
	target
	bin, dir       string // the test binary, and where go test would run it
	runs, bad      int
	passed, failed map[string]int
	kept           []string
}

// topLevel matches go test -v's result line of a top-level test (a
// subtest's is indented).
var topLevel = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+)`)

func (t *tally) runOnce(ctx context.Context, i int, o options, stderr io.Writer) {
	cmd := exec.CommandContext(ctx, t.bin, "-test.run", t.run, "-test.count", "1", "-test.v", "-test.timeout", o.timeout.String())
	cmd.Dir = t.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.runs++
	passed, failed := results(out.Bytes())
	for _, n := range passed {
		t.passed[n]++
	}
	for _, n := range failed {
		t.failed[n]++
	}
	sawFail := len(failed) > 0
	if err == nil && !sawFail {
		return
	}
	if !sawFail {
		// A panic, a timeout or a leak check in TestMain: no test line
		// says FAIL, the process does.
		t.failed["(process: "+exitText(err)+")"]++
	}
	t.bad++
	name := filepath.Join(o.keep, fmt.Sprintf("%s-run%d.txt", strings.NewReplacer("/", "_", ".", "").Replace(t.pkg), i+1))
	if werr := os.WriteFile(name, out.Bytes(), 0o644); werr == nil {
		t.kept = append(t.kept, name)
	}
	fmt.Fprintf(stderr, "%s run %d failed: %s\n", t.pkg, i+1, name)
}

// results reads go test -v's output: the top-level tests that passed and
// those that failed.
func results(out []byte) (passed, failed []string) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := topLevel.FindStringSubmatch(sc.Text())
		switch {
		case m == nil:
		case m[1] == "PASS":
			passed = append(passed, m[2])
		case m[1] == "FAIL":
			failed = append(failed, m[2])
		}
	}
	return passed, failed
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// packageDir is where go test would run the package's tests.
func packageDir(pkg string) (string, error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	return strings.TrimSpace(string(out)), err
}

func report(w io.Writer, tallies []*tally, runs int, took time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "package\ttest\tpassed\tfailed\n")
	for _, t := range tallies {
		names := make([]string, 0, len(t.passed)+len(t.failed))
		for n := range t.passed {
			names = append(names, n)
		}
		for n := range t.failed {
			if _, ok := t.passed[n]; !ok {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", t.pkg, n, t.passed[n], t.failed[n])
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "%d runs of each target in %s, %d failed runs\n", runs, took.Round(time.Second), sumFailed(tallies))
	for _, t := range tallies {
		for _, k := range t.kept {
			fmt.Fprintf(w, "failed run's output: %s\n", k)
		}
	}
}

func sumFailed(tallies []*tally) int {
	n := 0
	for _, t := range tallies {
		n += t.bad
	}
	return n
}

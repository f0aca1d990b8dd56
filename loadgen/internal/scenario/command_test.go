package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/htmlreport"
)

// fakeReport writes one line of each kind; exit is its ExitStatus.
type fakeReport struct{ exit int }

func (r fakeReport) WriteTable(w io.Writer) error { _, err := io.WriteString(w, "table\n"); return err }
func (r fakeReport) WriteJSON(w io.Writer) error  { _, err := io.WriteString(w, "{}\n"); return err }
func (r fakeReport) ExitStatus() int              { return r.exit }

// chartedReport has samples too.
type chartedReport struct{ fakeReport }

func (chartedReport) WriteCSV(w io.Writer) error { _, err := io.WriteString(w, "second\n"); return err }
func (chartedReport) HTMLRun() (htmlreport.Run, error) {
	return htmlreport.Run{Name: "fake run", Report: []htmlreport.Section{{Text: "table\n"}}}, nil
}

// fakeArgs: -fail makes the run fail, -exit N sets the report's status,
// -json/-csv/-html name the files.
type fakeArgs struct {
	fail  bool
	exit  int
	files Files
}

func parseFake(args []string) (fakeArgs, error) {
	var a fakeArgs
	fs := NewFlagSet("fake")
	fs.BoolVar(&a.fail, "fail", false, "fail")
	fs.IntVar(&a.exit, "exit", 0, "status")
	fs.StringVar(&a.files.JSON, "json", "", "")
	fs.StringVar(&a.files.CSV, "csv", "", "")
	fs.StringVar(&a.files.HTML, "html", "", "")
	err := fs.Parse(args)
	return a, err
}

func runFake(_ context.Context, a fakeArgs, notes io.Writer) (chartedReport, error) {
	fmt.Fprintln(notes, "note")
	if a.fail {
		return chartedReport{}, errors.New("no target")
	}
	return chartedReport{fakeReport{exit: a.exit}}, nil
}

var fakeCommand = NewCommand("fake", parseFake, func(w io.Writer) { io.WriteString(w, "usage\n") }, runFake,
	func(a fakeArgs) Files { return a.files })

func TestCommandExitStatus(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		ctx            context.Context
		args           []string
		code           int
		stdout, stderr string
	}{
		{context.Background(), nil, 0, "table\n", "note\n"},
		{context.Background(), []string{"-h"}, 0, "usage\n", ""},
		{context.Background(), []string{"-exit", "x"}, 2, "", "loadgen fake: invalid value \"x\" for flag -exit: parse error\n"},
		{context.Background(), []string{"-fail"}, 1, "", "note\nloadgen fake: no target\n"},
		{context.Background(), []string{"-exit", "3"}, 1, "table\n", "note\nloadgen fake: failed: the command exited 3\n"},
		{cancelled, nil, 130, "table\n", "note\n"},
		{context.Background(), []string{"-json", "-"}, 0, "{}\n", "note\ntable\n"}, // the table makes room for the JSON
	} {
		var stdout, stderr strings.Builder
		code := fakeCommand.Main(tc.ctx, tc.args, &stdout, &stderr)
		if code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
			t.Errorf("%q: %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

func TestCommandFiles(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	var stdout strings.Builder
	code := fakeCommand.Main(context.Background(), []string{"-json", path("r.json"), "-csv", path("r.csv"), "-html", path("r.html")}, &stdout, io.Discard)
	if code != 0 || stdout.String() != "table\n" {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
	for name, want := range map[string]string{"r.json": "{}\n", "r.csv": "second\n", "r.html": "fake run"} {
		b, err := os.ReadFile(path(name))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, %q; want %q in it", name, err, b, want)
		}
	}
	// A file that cannot be written: the table is out first, then exit 1.
	stdout.Reset()
	var stderr strings.Builder
	code = fakeCommand.Main(context.Background(), []string{"-json", filepath.Join(dir, "no", "such", "dir.json")}, &stdout, &stderr)
	if code != 1 || stdout.String() != "table\n" || !strings.Contains(stderr.String(), "loadgen fake: open ") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

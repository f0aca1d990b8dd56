package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

func TestSummary(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "callgrind.out.1.1")
	dump := "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 1\ncmd:  knowngood -variant echo-gnet\npart: 1\n\npositions: line\nevents: Ir\nsummary: 424805696\n\nfl=(1) ???\nfn=(1) 0x0000000000401000\n0 12\ntotals: 424805820\n"
	if err := os.WriteFile(file, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	if ir, err := summary(file); err != nil || ir != 424805696 {
		t.Errorf("summary = %d, %v; want 424805696", ir, err)
	}
	// A dump that callgrind has not finished writing yet.
	if err := os.WriteFile(file, []byte("# callgrind format\nversion: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := summary(file); err == nil {
		t.Error("a dump without its summary line was read")
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil || len(o.variants) != len(benchrun.EchoVariants) || len(o.conns) != 2 || len(o.modes) != 2 || o.reps != 3 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"-modes", "rate"}},
		{[]string{"-variants", "node"}},
		{[]string{"-conns", "0"}},
		{[]string{"-reps", "0"}},
		{[]string{"-duration", "0s"}},
	} {
		_, err := parseFlags(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.args[0]) {
			t.Errorf("%v: error %v, want one that names %s", tc.args, err, tc.args[0])
		}
	}
}

func TestWriteGoal(t *testing.T) {
	o, _ := parseFlags([]string{"-variants", "echo-gnet,echo-coder,echo-tcp"})
	results := map[cell]*perMessage{
		{"echo-gnet", 100, "pipelined"}:  {on: []float64{1010, 1004}, off: []float64{1000, 1002}},
		{"echo-coder", 100, "pipelined"}: {on: []float64{1060}, off: []float64{1000}},
	}
	var b strings.Builder
	writeGoal(&b, o, results)
	for _, want := range []string{
		"| echo-gnet instrumentation <= 5% | 0.2 to 1.0 | yes |",
		"| echo-coder instrumentation <= 5% | 6.0 to 6.0 | **no** |",
		"| echo-tcp instrumentation <= 5% | - | not measured |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

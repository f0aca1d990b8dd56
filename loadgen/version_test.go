package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

func TestPrintVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-version", "--version", "version"} {
		var out bytes.Buffer
		if !printVersion([]string{arg}, &out) {
			t.Fatalf("%s: not taken", arg)
		}
		if line := out.String(); !strings.HasPrefix(line, "loadgen ") || !strings.Contains(line, runtime.Version()) {
			t.Errorf("%s printed %q", arg, line)
		}
	}
	if printVersion([]string{"echo", "-version"}, &bytes.Buffer{}) || printVersion(nil, &bytes.Buffer{}) {
		t.Error("a scenario's arguments taken for -version")
	}
}

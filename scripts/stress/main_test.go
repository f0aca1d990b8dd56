package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestResults(t *testing.T) {
	out := `=== RUN   TestA
--- PASS: TestA (0.01s)
=== RUN   TestB
=== RUN   TestB/sub
    --- FAIL: TestB/sub (0.00s)
--- FAIL: TestB (0.02s)
--- SKIP: TestC (0.00s)
FAIL
`
	passed, failed := results([]byte(out))
	if !slices.Equal(passed, []string{"TestA"}) || !slices.Equal(failed, []string{"TestB"}) {
		t.Errorf("passed %v, failed %v; want [TestA], [TestB]", passed, failed)
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0", "./x:T"}, "-n 0"},
		{[]string{"-hog", "-1", "./x:T"}, "-hog -1"},
		{[]string{"-timeout", "0s", "./x:T"}, "-timeout"},
		{[]string{}, "no PKG:REGEX"},
		{[]string{"./x"}, "want PKG:REGEX"},
		{[]string{"./x:("}, "missing closing"},
	} {
		_, err := parseFlags(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
	o, err := parseFlags([]string{"-n", "3", "./a:TestX", "./b:^TestY$"}, io.Discard)
	if err != nil || o.runs != 3 || len(o.targets) != 2 || o.targets[1] != (target{"./b", "^TestY$"}) {
		t.Errorf("got %+v, %v", o, err)
	}
}

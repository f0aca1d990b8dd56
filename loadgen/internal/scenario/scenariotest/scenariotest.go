// Package scenariotest is what the scenarios' flag and report tests
// share.
package scenariotest

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
)

// GoodFlag is a case of a flag test: the arguments, and what they change
// in the configuration the defaults give.
type GoodFlag[C any] struct {
	Args []string
	Want func(*C)
}

// ParsesFlags checks that parse gives, for each case, defaults changed as
// the case's Want says.
func ParsesFlags[C any](t *testing.T, parse func([]string) (C, error), defaults C, cases []GoodFlag[C]) {
	t.Helper()
	for _, tc := range cases {
		got, err := parse(tc.Args)
		if err != nil {
			t.Errorf("ParseFlags(%q): %v", tc.Args, err)
			continue
		}
		want := defaults
		tc.Want(&want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseFlags(%q):\n got %+v\nwant %+v", tc.Args, got, want)
		}
	}
}

// BadFlag is a case of a flag test: the arguments, and what the error
// must say (the flag, and the accepted form).
type BadFlag struct {
	Args []string
	Want string
}

// RefusesFlags checks that parse refuses each case with a one-line error
// that holds its Want, and answers -h with flag.ErrHelp.
func RefusesFlags[C any](t *testing.T, parse func([]string) (C, error), cases []BadFlag) {
	t.Helper()
	for _, tc := range cases {
		_, err := parse(tc.Args)
		if err == nil {
			t.Errorf("ParseFlags(%q) = nil error, want one containing %q", tc.Args, tc.Want)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.Want) || strings.Contains(msg, "\n") {
			t.Errorf("ParseFlags(%q) = %q, want one line containing %q", tc.Args, msg, tc.Want)
		}
	}
	if _, err := parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("ParseFlags(-h) = %v, want flag.ErrHelp", err)
	}
}

// ListsFlags checks that usage lists each of names.
func ListsFlags(t *testing.T, usage func(io.Writer), names ...string) {
	t.Helper()
	var b strings.Builder
	usage(&b)
	for _, name := range names {
		if !strings.Contains(b.String(), "  "+name+" ") && !strings.Contains(b.String(), "  "+name+"\n") {
			t.Errorf("usage does not list %s:\n%s", name, b.String())
		}
	}
}

// JSONObject is rep's -json (scenario.WriteJSON), decoded; it fails t
// unless that is one JSON object on one line.
func JSONObject(t *testing.T, rep scenario.Report) map[string]any {
	t.Helper()
	var b strings.Builder
	if err := scenario.WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "}\n") {
		t.Fatalf("want one JSON object on one line, got %q", s)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %q", err, s)
	}
	return m
}

// HasFields checks that m, a decoded JSON object, holds each of want.
func HasFields(t *testing.T, m, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
}

// Text is what write (a report's WriteTable) writes; its error fails t.
func Text(t *testing.T, write func(io.Writer) error) string {
	t.Helper()
	var b strings.Builder
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Equal checks that got, a report's text, is want, and shows both when
// it is not.
func Equal(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// HasAll checks that got, a report's text, holds each of want.
func HasAll(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("table lacks %q:\n%s", w, got)
		}
	}
}

package scenario

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// testConfig is a scenario's configuration: the common flags and one of
// its own.
type testConfig struct {
	Common
	N int
}

var testWords = Words{DefaultURL: "ws://127.0.0.1:8080/", URL: "`URL` of the target", Admin: "`URL` of the admin listener"}

func newTestFlagSet(c *testConfig) *flag.FlagSet {
	fs := NewFlagSet("test")
	c.Register(fs, testWords)
	fs.IntVar(&c.N, "n", 1, "`N` things")
	return fs
}

// normalizeTest takes the host from -url as a scenario would, and
// resolves -admin.
func normalizeTest(c *testConfig, set map[string]bool) error {
	host, _, ok := strings.Cut(strings.TrimPrefix(c.URL, "ws://"), ":")
	if !ok {
		return errors.New("invalid value for flag -url")
	}
	return c.ResolveAdmin(set, host)
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want testConfig
	}{
		{nil, testConfig{Common: Common{URL: "ws://127.0.0.1:8080/", Admin: "http://127.0.0.1:9100"}, N: 1}},
		{[]string{"-url", "ws://10.0.0.7:3000/", "-n", "3", "-json", "-", "-csv", "a.csv", "-html", "a.html"},
			testConfig{Common: Common{URL: "ws://10.0.0.7:3000/", Admin: "http://10.0.0.7:9100", JSON: "-", CSV: "a.csv", HTML: "a.html"}, N: 3}},
		{[]string{"-admin", ""}, testConfig{Common: Common{URL: "ws://127.0.0.1:8080/"}, N: 1}},
		{[]string{"-admin", "127.0.0.1:9200"}, testConfig{Common: Common{URL: "ws://127.0.0.1:8080/", Admin: "http://127.0.0.1:9200"}, N: 1}},
		// Resolved when the run starts, not when the flags are read.
		{[]string{"-admin", "dns+http://kg-replicas:9100/"}, testConfig{Common: Common{URL: "ws://127.0.0.1:8080/", Admin: "dns+http://kg-replicas:9100"}, N: 1}},
		{[]string{"-admin", "dns+http://kg-replicas:9100,http://10.0.0.9:9100"}, testConfig{Common: Common{URL: "ws://127.0.0.1:8080/", Admin: "dns+http://kg-replicas:9100,http://10.0.0.9:9100"}, N: 1}},
	} {
		got, err := Parse(tc.args, newTestFlagSet, normalizeTest)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	json, csv, html := testConfig{Common: Common{JSON: "j", CSV: "c", HTML: "h"}}.Files()
	if json != "j" || csv != "c" || html != "h" {
		t.Errorf("Files() = %q, %q, %q", json, csv, html)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-admin", "http://127.0.0.1:9100/stats"}, "flag -admin: want http://HOST:PORT"},
		{[]string{"-admin", "dns+kg-replicas:9100/stats"}, "flag -admin: want dns+http://NAME:PORT"},
		{[]string{"-url", "nowhere"}, "flag -url"},
		{[]string{"-n", "x"}, "-n"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		got, err := Parse(tc.args, newTestFlagSet, normalizeTest)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || got != (testConfig{}) {
			t.Errorf("Parse(%q) = %+v, %v; want a one-line error with %q", tc.args, got, err, tc.want)
		}
	}
	if _, err := Parse([]string{"-h"}, newTestFlagSet, normalizeTest); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("Parse(-h) = %v, want flag.ErrHelp", err)
	}
}

func TestUsage(t *testing.T) {
	var b strings.Builder
	Usage(&b, newTestFlagSet)
	out := b.String()
	if !strings.HasPrefix(out, "usage: loadgen test [flags]\n") {
		t.Errorf("usage starts %q", out)
	}
	for _, want := range []string{
		"  -url URL\n    \tURL of the target (default \"ws://127.0.0.1:8080/\")",
		"  -admin URL\n    \tURL of the admin listener (default: the target's host, port 9100; '' = none)",
		"  -json FILE\n", "  -csv FILE\n", "  -html FILE\n", "  -n N\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
}

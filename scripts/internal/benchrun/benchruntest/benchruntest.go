// Package benchruntest is what the benchmark programs' tests share.
package benchruntest

import "testing"

// Flags parses no arguments with parse, failing t on an error, checks
// that parse refuses each of bad, and returns the defaults.
func Flags[O any](t *testing.T, parse func([]string) (O, error), bad ...[]string) O {
	t.Helper()
	o, err := parse(nil)
	if err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, args := range bad {
		if _, err := parse(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	return o
}

package benchrun

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Counts parses the comma-separated positive integers given to the flag
// -name.
func Counts(name, list string) ([]int, error) {
	var out []int
	for s := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("invalid value %q for flag -%s: want a comma-separated list of positive integers", list, name)
		}
		out = append(out, n)
	}
	return out, nil
}

// Pick parses the comma-separated words given to the flag -name, each one
// of valid, keeping their order.
func Pick(name, list string, valid []string) ([]string, error) {
	var out []string
	for v := range strings.SplitSeq(list, ",") {
		if v = strings.TrimSpace(v); !slices.Contains(valid, v) {
			return nil, fmt.Errorf("invalid value %q for flag -%s: want a list of %s", list, name, strings.Join(valid, ", "))
		}
		out = append(out, v)
	}
	return out, nil
}

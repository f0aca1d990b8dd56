// Package passfail opens loadgen's pass/fail criteria (-threshold: an
// expression such as "p99<=200ms" or "success>=99.9%") to the programs
// outside loadgen that judge a run the same way, such as the cluster
// experiment: the same parser, the same forms of limit and the same
// printed outcome, so that a threshold means one thing everywhere.
package passfail

import "github.com/knowngood/knowngood/loadgen/internal/threshold"

// The types, as loadgen's scenarios use them.
type (
	Kind      = threshold.Kind
	Metric    = threshold.Metric
	Threshold = threshold.Threshold
	Result    = threshold.Result
	Values    = threshold.Values
)

// The kinds of metric: a count, a share (99.9% or 0.999, kept as a
// fraction), a duration (kept in milliseconds).
const (
	Number   = threshold.Number
	Share    = threshold.Share
	Duration = threshold.Duration
)

// The functions: Parse an expression that names one of metrics, Evaluate
// thresholds against a run's values, whether all Passed, and Write one
// line per result.
var (
	Parse    = threshold.Parse
	Evaluate = threshold.Evaluate
	Passed   = threshold.Passed
	Write    = threshold.Write
)

// Package threshold is loadgen's pass/fail criteria, in the manner of k6's
// thresholds: an expression such as "p99<50ms", "success>=99.9%" or
// "lost==0" names one of a scenario's metrics, an operator (< <= > >= ==
// !=) and a limit, and a run passes it when the metric's value, as the
// report has it, satisfies the comparison.
//
// A metric is one of three kinds, and its limit is written in its kind's
// form: a count or a plain number (lost==0, rate>=1000), a share (a
// percentage, 99.9%, or a fraction from 0 to 1, 0.999) or a duration with
// its unit (50ms, 1.5s, 200us).
package threshold

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind is how a metric's values are written.
type Kind int

const (
	Number   Kind = iota // a count or a plain number: 0, 12, 1500.5
	Share                // a share: 99.9% or 0.999; kept as a fraction
	Duration             // a duration with its unit: 50ms, 1.5s; kept in milliseconds
)

// Metric is one name a threshold may use.
type Metric struct {
	Name string
	Kind Kind
	Help string // what it is, for -h
}

// Threshold is one parsed expression.
type Threshold struct {
	Expr   string  `json:"expr"` // as given
	Metric string  `json:"metric"`
	Op     string  `json:"op"`
	Limit  float64 `json:"limit"` // a Share as a fraction, a Duration in milliseconds
	Kind   Kind    `json:"-"`
}

// MaxLen bounds an expression's length.
const MaxLen = 200

// ops are the operators, the two-character ones first so that "<=" is not
// read as "<" and "=...".
var ops = []string{"<=", ">=", "==", "!=", "<", ">"}

var (
	nameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*`)
	numberRE = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
)

// Parse reads expr against the metrics a scenario has. The error says
// what is wrong and, for an unknown metric, lists the known ones.
func Parse(expr string, metrics []Metric) (Threshold, error) {
	if len(expr) > MaxLen {
		return Threshold{}, fmt.Errorf("longer than %d characters: want METRIC OP VALUE, e.g. p99<50ms", MaxLen)
	}
	s := strings.TrimSpace(expr)
	name := nameRE.FindString(s)
	if name == "" {
		return Threshold{}, errors.New("want METRIC OP VALUE, e.g. p99<50ms or success>=99.9%; the metrics: " + Names(metrics))
	}
	m, ok := find(metrics, name)
	if !ok {
		return Threshold{}, fmt.Errorf("unknown metric %q; the metrics: %s", name, Names(metrics))
	}
	rest := strings.TrimSpace(s[len(name):])
	op := ""
	for _, o := range ops {
		if strings.HasPrefix(rest, o) {
			op = o
			break
		}
	}
	if op == "" {
		return Threshold{}, fmt.Errorf("no operator after %q: want one of < <= > >= == !=", name)
	}
	value := strings.TrimSpace(rest[len(op):])
	limit, err := parseValue(value, m.Kind)
	if err != nil {
		return Threshold{}, fmt.Errorf("%s: %q: %w", name, value, err)
	}
	return Threshold{Expr: s, Metric: name, Op: op, Limit: limit, Kind: m.Kind}, nil
}

func find(metrics []Metric, name string) (Metric, bool) {
	for _, m := range metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Names lists the metrics' names, for an error or -h.
func Names(metrics []Metric) string {
	names := make([]string, len(metrics))
	for i, m := range metrics {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// parseValue reads a limit in kind's form.
func parseValue(s string, kind Kind) (float64, error) {
	switch kind {
	case Share:
		if p, ok := strings.CutSuffix(s, "%"); ok {
			p = strings.TrimSpace(p)
			v, err := number(p)
			if err != nil || v > 100 {
				return 0, errors.New("want a share: a percentage from 0% to 100% (99.9%) or a fraction from 0 to 1 (0.999)")
			}
			if !strings.ContainsAny(p, "eE") {
				// 99.9e-2 reads as the double nearest 0.999, the one
				// that 999 / 1000 gives; 99.9 / 100 is one above it.
				v, _ = strconv.ParseFloat(p+"e-2", 64)
				return v, nil
			}
			return v / 100, nil
		}
		v, err := number(s)
		if err != nil || v > 1 {
			return 0, errors.New("want a share: a percentage from 0% to 100% (99.9%) or a fraction from 0 to 1 (0.999)")
		}
		return v, nil
	case Duration:
		if numberRE.MatchString(s) {
			return 0, errors.New("want a duration with its unit, e.g. 50ms, 1.5s, 200us")
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || strings.HasPrefix(s, "+") {
			return 0, errors.New("want a duration with its unit, e.g. 50ms, 1.5s, 200us")
		}
		return float64(d) / float64(time.Millisecond), nil
	default:
		v, err := number(s)
		if err != nil {
			return 0, errors.New("want a number, 0 or more, without a unit (e.g. 0, 1000, 2.5)")
		}
		return v, nil
	}
}

// number reads a finite decimal number, 0 or more.
func number(s string) (float64, error) {
	if !numberRE.MatchString(s) {
		return 0, errors.New("not a number")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.New("out of range")
	}
	return v, nil
}

// Holds says whether value satisfies the threshold.
func (t Threshold) Holds(value float64) bool {
	switch t.Op {
	case "<":
		return value < t.Limit
	case "<=":
		return value <= t.Limit
	case ">":
		return value > t.Limit
	case ">=":
		return value >= t.Limit
	case "==":
		return value == t.Limit
	case "!=":
		return value != t.Limit
	}
	return false
}

// Result is one threshold's outcome. Value is the metric's value, in the
// unit Unit (ms for a duration, % for a share); nil when the run has none
// (a latency of no message), which fails the threshold.
type Result struct {
	Expr   string   `json:"expr"`
	Metric string   `json:"metric"`
	Value  *float64 `json:"value"`
	Unit   string   `json:"unit,omitempty"`
	OK     bool     `json:"ok"`
}

// Values are a run's metrics: a Share as a fraction, a Duration in
// milliseconds. A metric the run has no value for is absent.
type Values map[string]float64

// Evaluate judges each threshold against values.
func Evaluate(ts []Threshold, values Values) []Result {
	out := make([]Result, 0, len(ts))
	for _, t := range ts {
		r := Result{Expr: t.Expr, Metric: t.Metric}
		switch t.Kind {
		case Duration:
			r.Unit = "ms"
		case Share:
			r.Unit = "%"
		}
		if v, ok := values[t.Metric]; ok && !math.IsNaN(v) {
			r.OK = t.Holds(v)
			if t.Kind == Share {
				v *= 100
			}
			r.Value = &v
		}
		out = append(out, r)
	}
	return out
}

// Passed says whether every result holds.
func Passed(rs []Result) bool {
	for _, r := range rs {
		if !r.OK {
			return false
		}
	}
	return true
}

// Write prints one line a result: "✓ p99<50ms (p99 = 12.3ms)" or
// "✗ success>=99.9% (success = 97%)".
func Write(w io.Writer, rs []Result) {
	for _, r := range rs {
		mark := "✓"
		if !r.OK {
			mark = "✗"
		}
		fmt.Fprintf(w, "%s %s (%s = %s)\n", mark, r.Expr, r.Metric, r.text())
	}
}

// text is the value as the line shows it.
func (r Result) text() string {
	if r.Value == nil {
		return "none: the run did not measure it"
	}
	v := *r.Value
	switch r.Unit {
	case "ms":
		switch {
		case v >= 1000:
			return trim(v/1000, 3) + "s"
		case v >= 1:
			return trim(v, 1) + "ms"
		}
		return trim(v, 3) + "ms"
	case "%":
		return trim(v, 2) + "%"
	}
	return trim(v, 2)
}

// trim formats v with at most prec decimals, without trailing zeros.
func trim(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

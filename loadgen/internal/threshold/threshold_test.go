package threshold

import (
	"strings"
	"testing"
)

var metrics = []Metric{
	{Name: "success", Kind: Share},
	{Name: "p99", Kind: Duration},
	{Name: "lost", Kind: Number},
	{Name: "rate", Kind: Number},
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		expr   string
		metric string
		op     string
		limit  float64
	}{
		{"success>=99.9%", "success", ">=", 0.999},
		{"success >= 0.5", "success", ">=", 0.5},
		{" success>0% ", "success", ">", 0},
		{"success==100%", "success", "==", 1},
		{"p99<50ms", "p99", "<", 50},
		{"p99<=1.5s", "p99", "<=", 1500},
		{"p99 < 200us", "p99", "<", 0.2},
		{"p99<200µs", "p99", "<", 0.2},
		{"p99>0s", "p99", ">", 0},
		{"lost==0", "lost", "==", 0},
		{"lost!=3", "lost", "!=", 3},
		{"rate>=1e3", "rate", ">=", 1000},
		{"rate>.5", "rate", ">", 0.5},
		{"rate>2.", "rate", ">", 2},
	} {
		th, err := Parse(c.expr, metrics)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		if th.Metric != c.metric || th.Op != c.op || th.Limit != c.limit || th.Expr != strings.TrimSpace(c.expr) {
			t.Errorf("Parse(%q) = %+v; want %s %s %v", c.expr, th, c.metric, c.op, c.limit)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"", "want METRIC OP VALUE"},
		{"   ", "want METRIC OP VALUE"},
		{"<5", "want METRIC OP VALUE"},
		{"99<p99", "want METRIC OP VALUE"},
		{"P99<5ms", "want METRIC OP VALUE"},
		{"p98<5ms", `unknown metric "p98"; the metrics: success, p99, lost, rate`},
		{"p99", `no operator after "p99"`},
		{"p99=5ms", `no operator after "p99"`},
		{"p99=>5ms", `no operator after "p99"`},
		{"p99<", "want a duration with its unit"},
		{"p99<50", "want a duration with its unit"},
		{"p99<<50ms", "want a duration with its unit"},
		{"p99<50xs", "want a duration with its unit"},
		{"p99<-5ms", "want a duration with its unit"},
		{"p99<50 ms", "want a duration with its unit"},
		{"p99<99999999999999999999h", "want a duration with its unit"},
		{"p99<50%", "want a duration with its unit"},
		{"success>=99", "want a share"},
		{"success>=101%", "want a share"},
		{"success>=-1%", "want a share"},
		{"success>=abc%", "want a share"},
		{"success>=1e999%", "want a share"},
		{"success>=50ms", "want a share"},
		{"lost==1e400", "want a number"},
		{"lost==NaN", "want a number"},
		{"lost==Inf", "want a number"},
		{"lost==0x10", "want a number"},
		{"lost==-1", "want a number"},
		{"lost==5%", "want a number"},
		{"lost==5ms", "want a number"},
		{"lost==0 && p99<5ms", "want a number"},
		{"lost==" + strings.Repeat("9", 300), "longer than 200 characters"},
	} {
		_, err := Parse(c.expr, metrics)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v; want an error with %q", c.expr, err, c.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	parse := func(exprs ...string) []Threshold {
		var ts []Threshold
		for _, e := range exprs {
			th, err := Parse(e, metrics)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, th)
		}
		return ts
	}
	rs := Evaluate(parse("success>=99.9%", "p99<50ms", "lost==0", "rate>=10", "p99<1s"),
		Values{"success": 0.97, "p99": 12.34, "lost": 0, "rate": 10})
	want := []bool{false, true, true, true, true}
	for i, r := range rs {
		if r.OK != want[i] {
			t.Errorf("%s: ok %v, want %v", r.Expr, r.OK, want[i])
		}
	}
	if Passed(rs) {
		t.Error("Passed with a threshold crossed")
	}
	var b strings.Builder
	Write(&b, rs)
	wantText := "✗ success>=99.9% (success = 97%)\n✓ p99<50ms (p99 = 12.3ms)\n✓ lost==0 (lost = 0)\n✓ rate>=10 (rate = 10)\n✓ p99<1s (p99 = 12.3ms)\n"
	if b.String() != wantText {
		t.Errorf("Write:\n%s\nwant:\n%s", b.String(), wantText)
	}
	if *rs[0].Value != 97 || rs[0].Unit != "%" || rs[1].Unit != "ms" {
		t.Errorf("results %+v", rs)
	}

	// A metric the run has no value for fails.
	rs = Evaluate(parse("p99<50ms"), Values{})
	if rs[0].OK || rs[0].Value != nil || Passed(rs) {
		t.Errorf("no value: %+v", rs)
	}
	b.Reset()
	Write(&b, rs)
	if b.String() != "✗ p99<50ms (p99 = none: the run did not measure it)\n" {
		t.Errorf("no value: %q", b.String())
	}
	if !Passed(nil) {
		t.Error("no thresholds should pass")
	}
}

func TestHoldsOperators(t *testing.T) {
	for _, c := range []struct {
		op         string
		lt, eq, gt bool // value below, at, above the limit
	}{
		{"<", true, false, false}, {"<=", true, true, false}, {">", false, false, true},
		{">=", false, true, true}, {"==", false, true, false}, {"!=", true, false, true},
	} {
		th := Threshold{Op: c.op, Limit: 5}
		if th.Holds(4) != c.lt || th.Holds(5) != c.eq || th.Holds(6) != c.gt {
			t.Errorf("%s: %v %v %v", c.op, th.Holds(4), th.Holds(5), th.Holds(6))
		}
	}
}

// TestShareExact: a percentage is the fraction that a count over a count
// gives, so that 999 of 1000 passes success>=99.9%.
func TestShareExact(t *testing.T) {
	for _, c := range []struct {
		expr   string
		ok, of int
	}{
		{"success>=99.9%", 999, 1000}, {"success>=99.99%", 9999, 10000}, {"success>=70%", 7, 10},
		{"success>=33.3%", 333, 1000}, {"success==10%", 1, 10},
	} {
		th, err := Parse(c.expr, metrics)
		if err != nil {
			t.Fatal(err)
		}
		if v := float64(c.ok) / float64(c.of); !th.Holds(v) {
			t.Errorf("%s: %d of %d (%v) fails; limit %v", c.expr, c.ok, c.of, v, th.Limit)
		}
	}
}

package main

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/echo"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/scripts/internal/benchrun/benchruntest"
)

func TestParseFlags(t *testing.T) {
	o := benchruntest.Flags(t, parseFlags, []string{"-duration", "0s"}, []string{"-warmup", "-1s"}, []string{"-reps", "0"}, []string{"-conns", "x"}, []string{"-modes", "nope"}, []string{"-variants", "nope"})
	if o.reps != 3 || len(o.conns) != 2 || len(o.modes) != 2 || !o.metricsOff || o.size != 128 || o.inflight != 32 {
		t.Errorf("defaults: %+v", o)
	}
}

// TestTargets: each variant, then each Go one again with -metrics=false;
// Node once.
func TestTargets(t *testing.T) {
	o := options{variants: []string{benchrun.GnetEcho, node}, metricsOff: true}
	var got []string
	for _, tg := range o.targets() {
		got = append(got, tg.String())
	}
	if want := benchrun.GnetEcho + "|node ws|" + benchrun.GnetEcho + " -metrics=false"; strings.Join(got, "|") != want {
		t.Errorf("targets %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestSummarize(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	rep := func(rate float64) *echo.Report {
		return &echo.Report{MessagesPerSecond: rate, Messages: 1000, P50ms: ms(1), P99ms: ms(2), ClientCPUSeconds: 0.5}
	}
	s := summarize([]result{
		{rep: rep(100), serverCPU: 1},
		{rep: rep(300), serverCPU: 1},
		{rep: rep(200), serverCPU: 1},
		{err: errors.New("refused")},
	})
	if !s.ok || s.runs != 4 || s.failed != 1 || s.rate != 200 || s.serverUsPerMsg != 1000 || s.clientPerServer != 0.5 {
		t.Errorf("summary %+v", s)
	}
	if s := summarize([]result{{err: errors.New("refused")}}); s.ok {
		t.Errorf("a cell of failed runs is ok: %+v", s)
	}
}

// TestWriteTables: the ratios against the raw TCP floor and Node, and the
// goals at pipelined C = 100.
func TestWriteTables(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	one := func(rate, cpu float64) []result {
		return []result{{rep: &echo.Report{MessagesPerSecond: rate, Messages: 1000, P50ms: ms(1), P99ms: ms(2), ClientCPUSeconds: cpu / 2}, serverCPU: cpu}}
	}
	const c, mode = 100, echo.Pipelined
	o := options{reps: 1, conns: []int{c}, modes: []string{mode}, variants: []string{benchrun.EchoFloor, benchrun.GnetEcho, benchrun.GnetFloor, node}}
	results := map[cell][]result{
		{target{variant: benchrun.EchoFloor}, c, mode}: one(1000, 1),
		{target{variant: benchrun.GnetEcho}, c, mode}:  one(950, 1.1),
		{target{variant: benchrun.GnetFloor}, c, mode}: one(1000, 1),
		{target{variant: node}, c, mode}:               one(500, 2),
	}
	var b strings.Builder
	writeTables(&b, o, results)
	out := b.String()
	for _, want := range []string{
		"| " + benchrun.GnetEcho + " | 100 | pipelined | 950 | 1.000 | 2.000 | 1.10 | 0.55 | 1100.00 | 0.95 | 1.90 | 0 |",
		"| " + benchrun.GnetEcho + " >= 0.9x " + benchrun.EchoFloor + " | 0.95x | yes |",
		"| " + benchrun.GnetEcho + " >= 1.5x node ws | 1.90x | yes |",
		"| " + benchrun.GnetEcho + " server µs/msg <= 1.2x " + benchrun.GnetFloor + " | 1.10x | yes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
}

// loadgen's clients start package-level workers from init on.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/handshake"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/scripts/internal/benchrun/benchruntest"
)

func TestParseFlags(t *testing.T) {
	o := benchruntest.Flags(t, parseFlags, []string{"-sustained", "-1s"}, []string{"-workers", "0"}, []string{"-reps", "101"}, []string{"-burst-reps", "0"}, []string{"-delay", "soon"}, []string{"-variants", " , "}, []string{"-n", "x"})
	if strings.Join(o.variants, ",") != strings.Join(benchrun.SocketIOVariants, ",") || len(o.ns) != 5 || o.reps != 3 || o.delayOrDefault() <= 0 {
		t.Errorf("defaults: %+v", o)
	}
	if o, err := parseFlags([]string{"-delay", "20ms"}); err != nil || o.delayOrDefault() != 20*time.Millisecond {
		t.Errorf("-delay 20ms: %v, %v", o.delayOrDefault(), err)
	}
}

// TestWriteTable: the shared loop's predicted success, min(1, T / (N x
// delay)), beside the measured one, and the baseline over Node.
func TestWriteTable(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	rep := func(connected int, rate float64) *handshake.Report {
		return &handshake.Report{Attempts: 100, Connected: connected, HandshakesPerSecond: rate, P50ms: ms(1), P99ms: ms(2), ClientCPUSeconds: 0.1}
	}
	o := options{deadline: time.Second, transport: "websocket", delay: "20ms"}
	rows := []row{
		{variant: benchrun.SioBaseline, n: 100, rep: rep(100, 1000), serverCPU: ms(0.5)},
		{variant: benchrun.SharedLoop, n: 100, rep: rep(50, 50)},
		{variant: benchrun.SharedLoop, n: 200, err: errors.New("refused")},
	}
	var b strings.Builder
	writeTable(&b, o, rows)
	writeRatios(&b, rows, []row{{variant: "node", n: 100, rep: rep(100, 500)}, {variant: "node", n: 200}})
	out := b.String()
	for _, want := range []string{
		"| " + benchrun.SioBaseline + " | 100 | 100.0 | 100.0 | 1000 | 1.0 | 2.0 | - | - | 0.50 | 0.10 |",
		"| " + benchrun.SharedLoop + " | 100 | 50.0 | 50.0 | 50 |",
		"| " + benchrun.SharedLoop + " | 200 | error: refused |",
		"| 100 | 1000 | 500 | 2.00 |",
		"| 200 | - | - | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
}

// TestWriteSustained: medians per target and the ratios against Node and
// the bare server.
func TestWriteSustained(t *testing.T) {
	ts := []*sioTarget{{name: benchrun.SioBaseline}, {name: bareName}, {name: nodeName}}
	res := func(n int, serverCPU float64) []sustainedResult {
		return []sustainedResult{{handshakes: n, seconds: 1, serverCPU: serverCPU, clientCPU: serverCPU}}
	}
	results := map[string][]sustainedResult{
		benchrun.SioBaseline: res(3000, 0.3),
		bareName:             res(3000, 0.3),
		nodeName:             res(1000, 1),
	}
	var b strings.Builder
	writeSustained(&b, options{workers: 4, sustained: time.Second, reps: 1}, ts, results)
	out := b.String()
	for _, want := range []string{
		"| **" + benchrun.SioBaseline + "** | median | | | **3000** | **100** | |",
		"| empty rate / Node's | 3.00x | >= 3.00x | met |",
		"| empty CPU per handshake / Node's | 0.10x | <= 0.35x | met |",
		"| empty CPU per handshake / bare zishang520's | 1.00x | <= 1.00x | met |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
}

func TestPerHandshake(t *testing.T) {
	if got := perHandshake(0.5, 1000); got != 500 {
		t.Errorf("perHandshake(0.5 s, 1000) = %v µs, want 500", got)
	}
	if got := perHandshake(1, 0); got != 0 {
		t.Errorf("perHandshake without a handshake = %v, want 0", got)
	}
}

// loadgen's clients start package-level workers from init on.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

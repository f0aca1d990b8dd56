package metrics_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/metrics/metricstest"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden")

// TestGolden pins every knowngood metric a target exposes: name, type, help
// text and labels, per family: the series every variant has, then the ones
// only a broadcast target registers (EnableBroadcast). Dashboards, alerts
// and scripts read these names, so a change here is a change users see.
func TestGolden(t *testing.T) {
	reg := metrics.NewRegistry()
	m := metrics.New(reg, "empty")
	// A vector shows up only once it has a child: record one of each.
	metricstest.RecordEvery(m)
	m.Fanout(time.Millisecond) // not registered yet: records nothing
	m.Dropped(1)
	every := describe(t, reg)
	if strings.Contains(every, "broadcast_") {
		t.Errorf("a target that is not a broadcast one exposes broadcast series:\n%s", every)
	}
	m.EnableBroadcast()
	m.EnableBroadcast() // a second hub on the same metrics: no double registration
	m.Fanout(time.Millisecond)
	m.Dropped(1)
	all := describe(t, reg)
	var broadcast strings.Builder
	for _, e := range entries(all) {
		if !strings.Contains(every, e) {
			broadcast.WriteString(e)
		}
	}
	got := "# every variant\n" + every + "# broadcast variants add (EnableBroadcast)\n" + broadcast.String()

	const golden = "testdata/metrics.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("metrics changed (go test -run TestGolden -update rewrites %s if on purpose):\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

// describe renders reg's knowngood_ families, one entry each (see entries),
// and checks that the Go and process collectors are there too.
func describe(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	have := map[string]bool{}
	for _, f := range families {
		name := f.GetName()
		have[name] = true
		if !strings.HasPrefix(name, "knowngood_") {
			continue
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			value := "*"
			if l.GetName() == "variant" && name != "knowngood_build_info" {
				value = l.GetValue()
			}
			labels = append(labels, l.GetName()+"="+value)
		}
		slices.Sort(labels)
		fmt.Fprintf(&b, "%s %s {%s}\n  %s\n", name, f.GetType(), strings.Join(labels, ","), f.GetHelp())
		if h := f.GetMetric()[0].GetHistogram(); h != nil {
			var bounds []string
			for _, bucket := range h.GetBucket() {
				bounds = append(bounds, fmt.Sprintf("%.6g", bucket.GetUpperBound()))
			}
			fmt.Fprintf(&b, "  buckets %s\n", strings.Join(bounds, " "))
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if !have[name] {
			t.Errorf("%s is missing", name)
		}
	}
	return b.String()
}

// entries splits describe's text into one string per family: its
// unindented first line and the indented lines after it.
func entries(s string) []string {
	var out []string
	for _, line := range strings.SplitAfter(s, "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, " ") && len(out) > 0 {
			out[len(out)-1] += line
			continue
		}
		out = append(out, line)
	}
	return out
}

package replicas

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/internal/statsclient"
	"github.com/knowngood/knowngood/shared/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSplit(t *testing.T) {
	got, err := Split("http://a:1, b:2,https://c:3/")
	if err != nil || strings.Join(got, " ") != "http://a:1 http://b:2 https://c:3" {
		t.Errorf("Split = %q, %v", got, err)
	}
	for _, bad := range []string{"http://a:1,", "http://a:1,ftp://b:2", "http://a:1,http://a:1", "http://a:1,http://b:2/x"} {
		if _, err := Split(bad); err == nil || !strings.Contains(err.Error(), "flag -admin") {
			t.Errorf("Split(%q): %v", bad, err)
		}
	}
}

func snap(variant string, received uint64, active int64, cpu float64, hist ...protocol.Bucket) statsclient.Snapshot {
	return statsclient.Snapshot{Stats: protocol.Stats{Variant: variant, UptimeSeconds: 5, MessagesReceived: received, ConnectionsActive: active,
		Handshakes: map[string]uint64{"ok": uint64(len(hist))}, Faults: map[string]uint64{"drop": received / 10},
		HandshakeHistogram: hist}, CPUSeconds: &cpu}
}

// TestSum: counts, gauges, CPU and histograms add up; the percentiles are
// those of every replica's handshakes together.
func TestSum(t *testing.T) {
	reads := []Read{
		{Admin: "http://a", Snapshot: snap("echo-gorilla", 100, 3, 1, protocol.Bucket{UpToMicros: 1000, Count: 1})},
		{Admin: "http://b", Err: errors.New("refused")},
		{Admin: "http://c", Snapshot: snap("echo-gorilla", 20, 2, 0.5, protocol.Bucket{UpToMicros: 1000, Count: 1}, protocol.Bucket{UpToMicros: 90000, Count: 98})},
	}
	s, err := Sum(reads)
	if err != nil {
		t.Fatal(err)
	}
	if s.MessagesReceived != 120 || s.ConnectionsActive != 5 || *s.CPUSeconds != 1.5 || s.Faults["drop"] != 12 || s.Variant != "echo-gorilla" {
		t.Errorf("sum %+v", s.Stats)
	}
	if l := s.HandshakeLatency; l.Count != 100 || l.P50 < 0.089 || l.P50 > 0.091 {
		t.Errorf("latency of the sum %+v: want 100 handshakes, p50 90ms", l)
	}
	if _, err := Sum([]Read{{Admin: "http://b", Err: errors.New("refused")}}); err == nil || !strings.Contains(err.Error(), "http://b: refused") {
		t.Errorf("none read: %v", err)
	}
}

// TestParts: the difference over the replicas read both times; the
// others named, with why.
func TestParts(t *testing.T) {
	before := []Read{{Admin: "http://a", Snapshot: snap("v", 100, 0, 1)}, {Admin: "http://b", Snapshot: snap("v", 10, 0, 1)}, {Admin: "http://c", Err: errors.New("refused")}}
	after := []Read{{Admin: "http://a", Snapshot: snap("v", 150, 0, 2)}, {Admin: "http://b", Err: errors.New("timeout")}, {Admin: "http://c", Snapshot: snap("v", 10, 0, 1)}}
	b, a, missing := Common(before, after)
	if d := protocol.Diff(b.Stats, a.Stats); d.MessagesReceived != 50 || len(missing) != 2 {
		t.Errorf("common diff %d, missing %d", d.MessagesReceived, len(missing))
	}
	parts := Parts(before, after)
	if parts[0].Diff.MessagesReceived != 50 || parts[1].Error != "after the run: timeout" || parts[2].Error != "before the run: refused" {
		t.Errorf("parts %+v", parts)
	}
	if got := Missing(parts); strings.Join(got, " ") != "http://b http://c" {
		t.Errorf("missing %q", got)
	}
	var sb strings.Builder
	WriteTable(&sb, parts)
	if !strings.Contains(sb.String(), "http://b  unreachable: after the run: timeout") {
		t.Errorf("table:\n%s", sb.String())
	}
	sb.Reset()
	WriteTable(&sb, parts[:1])
	if sb.Len() != 0 {
		t.Errorf("one replica wrote a table: %q", sb.String())
	}
}

// TestMerge: each replica's window from the earliest before to the latest
// after; a replica that restarted in between is refused.
func TestMerge(t *testing.T) {
	at := func(uptime float64, n uint64) *protocol.Stats {
		return &protocol.Stats{Variant: "v", UptimeSeconds: uptime, MessagesReceived: n}
	}
	m, err := Merge([][]Replica{
		{{Admin: "http://a", Before: at(10, 5), After: at(20, 50)}, {Admin: "http://b", Error: "refused"}},
		{{Admin: "http://a", Before: at(8, 1), After: at(15, 30)}, {Admin: "http://b", Before: at(8, 1), After: at(15, 30)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m[0].Diff.MessagesReceived != 49 || m[1].Diff != nil || m[1].Error != "refused" {
		t.Errorf("merged %+v", m)
	}
	if s := Total(m); s.MessagesReceived != 49 {
		t.Errorf("total %d", s.MessagesReceived)
	}
	_, err = Merge([][]Replica{{{Admin: "http://a", Before: at(10, 5), After: at(20, 50)}}, {{Admin: "http://a", Before: at(1, 60), After: at(2, 61)}}})
	if err == nil || !strings.Contains(err.Error(), "replica http://a restarted") {
		t.Errorf("restart: %v", err)
	}
}

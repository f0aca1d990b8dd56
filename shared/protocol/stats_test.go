package protocol_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/shared/protocol"
)

func stats(ok uint64, latenciesUS ...int64) protocol.Stats {
	h := protocol.NewHistogram()
	for _, v := range latenciesUS {
		_ = h.RecordValue(v)
	}
	return protocol.Stats{
		Variant:            "empty",
		ConnectionsTotal:   ok,
		Handshakes:         map[string]uint64{"ok": ok, "failed": 1},
		HandshakeHistogram: protocol.Buckets(h),
		MessagesReceived:   10 * ok,
		Disconnects:        map[string]uint64{"transport close": ok},
		CPUSeconds:         float64(ok),
	}
}

// TestDiff: the percentiles of a diff are those of the handshakes in
// between, not of everything since the start.
func TestDiff(t *testing.T) {
	before := stats(3, 100_000, 100_000, 100_000) // three slow ones before the run
	after := stats(8, 100_000, 100_000, 100_000, 1000, 1000, 1000, 1000, 2000)
	d := protocol.Diff(before, after)
	if d.ConnectionsTotal != 5 || d.Handshakes["ok"] != 5 || d.MessagesReceived != 50 || d.CPUSeconds != 5 {
		t.Errorf("counts: %+v", d)
	}
	if _, changed := d.Handshakes["failed"]; changed {
		t.Errorf("unchanged counts should be left out: %v", d.Handshakes)
	}
	if d.HandshakeLatency.Count != 5 || d.HandshakeLatency.Max > 0.00201 || d.HandshakeLatency.P50 > 0.00101 {
		t.Errorf("latency of the run: %+v", d.HandshakeLatency)
	}
}

func TestDecodeStats(t *testing.T) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(stats(2, 500))
	s, err := protocol.DecodeStats(&buf)
	if err != nil || s.Handshakes["ok"] != 2 {
		t.Fatalf("round trip: %+v %v", s, err)
	}
	for _, bad := range []string{"", "<html>", `{"handshakes":{}}`, `[1,2]`} {
		if _, err := protocol.DecodeStats(strings.NewReader(bad)); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
}

func FuzzDecodeStats(f *testing.F) {
	f.Add(`{"variant":"empty","handshake_histogram":[{"le_us":5,"n":3}]}`)
	f.Add(`{"variant":"x","handshake_histogram":[{"le_us":-5,"n":-3}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := protocol.DecodeStats(strings.NewReader(doc))
		if err == nil {
			_ = protocol.Diff(s, s)
		}
	})
}

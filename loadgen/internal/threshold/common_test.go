package threshold

import "testing"

func TestCommon(t *testing.T) {
	ms := append(append(Connected("s", "o", "f"), Latencies("lat", "p50", "p99")...), CPU("/stats")...)
	want := []Metric{{"success", Share, "s"}, {"ok", Number, "o"}, {"failed", Number, "f"}, {"p50", Duration, "lat"}, {"p99", Duration, ""},
		{"client_cpu", Number, "the client's CPU seconds"}, {"server_cpu", Number, "the server's CPU seconds (/stats)"}}
	if len(ms) != len(want) {
		t.Fatalf("%d metrics, want %d", len(ms), len(want))
	}
	for i := range ms {
		if ms[i] != want[i] {
			t.Errorf("metric %d: %+v, want %+v", i, ms[i], want[i])
		}
	}
	if len(CPU("")) != 1 {
		t.Error("CPU(\"\") has a server_cpu")
	}
	v := Values{}
	p := 2.5
	v.Share("success", 1, 4)
	v.Share("none", 1, 0)
	v.Known("p50", &p)
	v.Known("p99", nil)
	if len(v) != 2 || v["success"] != 0.25 || v["p50"] != 2.5 {
		t.Errorf("values %v", v)
	}
}

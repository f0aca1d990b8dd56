package conns

import (
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/scenario/scenariotest"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/shared/protocol"
)

func sampleReport() *Report {
	f := func(v float64) *float64 { return &v }
	active, opened := int64(18990), uint64(19000)
	return &Report{
		Heading: scenario.Heading{Client: "gorilla/websocket", Version: "v1.5.3", URL: "ws://127.0.0.1:8080/"}, N: 19000, Batch: 1000,
		Sources: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}, Hold: "10s",
		OpenFiles:      "open-files limit 20000 (hard 20000), 9 open: room for 19959 connections",
		OpenFilesAllow: 19959,
		Established:    18995, Failed: 5, Dropped: 5, Held: 18990, EstablishSeconds: 2.5,
		Batches:          []Batch{{Connections: 1000, Established: 1000, Seconds: 0.1234}, {Connections: 1000, Established: 995, Failed: 5, Seconds: 0.5}},
		ClientCPUSeconds: 1.234,
		Errors: map[string]tally.Count{
			"timeout":            {Count: 5, First: "dial tcp 127.0.0.3:0->127.0.0.1:8080: i/o timeout"},
			"dropped while held": {Count: 5, First: "websocket: close 1001 (going away)"},
		},
		Judgment: scenario.Judgment[ServerView]{Server: &ServerView{Admin: "http://127.0.0.1:9100", Variant: "echo-gorilla", RSSBefore: f(20 << 20), RSSAfter: f(20<<20 + 18990*17*1024), RSSSource: "stats",
			BytesPerConnection: f(17 * 1024), ConnectionsActive: &active, ConnectionsOpened: &opened}},
	}
}

func TestWriteTable(t *testing.T) {
	got := scenariotest.Text(t, sampleReport().WriteTable)
	want := `conns: 19000 idle connections to ws://127.0.0.1:8080/ in batches of 1000 from 3 source addresses (127.0.0.1-127.0.0.3), held 10s (gorilla/websocket v1.5.3)
open-files limit 20000 (hard 20000), 9 open: room for 19959 connections
                    client            server (echo-gorilla, http://127.0.0.1:9100)
established         18995 of 19000    19000 opened
failed              5                 
dropped while held  5                 
held                18990             18990 active
establish           2.5s (7598/s)     
batches             2 (123ms, 500ms)  
cpu seconds         1.23              
resident MiB                          20.0 -> 335.3 (stats)
per connection                        17.00 KiB
errors:
         5  dropped while held  first: websocket: close 1001 (going away)
         5  timeout             first: dial tcp 127.0.0.3:0->127.0.0.1:8080: i/o timeout
`
	scenariotest.Equal(t, got, want)

	// Many batches: the median and the slowest; no server.
	r := sampleReport()
	r.Server, r.ServerError, r.Sources = nil, "no /stats from http://127.0.0.1:9100: 404 Not Found", nil
	r.Batches = nil
	for i := range 19 {
		r.Batches = append(r.Batches, Batch{Connections: 1000, Established: 1000, Seconds: float64(i+1) / 10})
	}
	got = scenariotest.Text(t, r.WriteTable)
	scenariotest.HasAll(t, got, "from the kernel's choice of source address", "batches             19 (median 1s, slowest 1.9s)", "server: no /stats from")
	if strings.Contains(got, "per connection") {
		t.Errorf("per-connection figure without a server:\n%s", got)
	}
}

// TestWriteConnectTimes: the connect times and the rate, in the table
// and in the JSON, from the histogram.
func TestWriteConnectTimes(t *testing.T) {
	r := sampleReport()
	h := protocol.NewHistogram()
	for _, ms := range []int64{10, 20, 30, 1000} {
		_ = h.RecordValue(ms * 1000)
	}
	r.Established, r.EstablishSeconds, r.Echo = 4, 2, 128
	r.setConnect(h)
	got := scenariotest.Text(t, r.WriteTable)
	scenariotest.HasAll(t, got, "conns: 19000 connections echoing 128 bytes once, to ws://", "connect ms          mean 265.4, p50 20.1, p99 1003.5, max 1003.5")
	m := scenariotest.JSONObject(t, r)
	scenariotest.HasFields(t, m, map[string]any{"connects_per_second": 2.0, "echo": 128.0})
	if c := m["connect_ms"].(map[string]any); c["p50"] != 20.095 || len(m["connect_histogram"].([]any)) != 4 {
		t.Errorf("connect_ms %v, histogram %v", c, m["connect_histogram"])
	}
}

func TestWriteJSON(t *testing.T) {
	m := scenariotest.JSONObject(t, sampleReport())
	scenariotest.HasFields(t, m, map[string]any{"n": 19000.0, "established": 18995.0, "held": 18990.0, "dropped": 5.0, "establish_seconds": 2.5, "open_files_allow": 19959.0})
	if srv := m["server"].(map[string]any); srv["bytes_per_connection"] != 17408.0 || srv["resident_source"] != "stats" {
		t.Errorf("server = %v", srv)
	}
	if batches := m["batches"].([]any); len(batches) != 2 || batches[1].(map[string]any)["failed"] != 5.0 {
		t.Errorf("batches = %v", batches)
	}
}

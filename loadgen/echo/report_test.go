package echo

import (
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/scenario/scenariotest"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
)

func sampleReport() *Report {
	f := func(v float64) *float64 { return &v }
	u := func(v uint64) *uint64 { return &v }
	active := int64(100)
	return &Report{
		Heading: scenario.Heading{Client: "gorilla/websocket", Version: "v1.5.3", URL: "ws://127.0.0.1:8080/"}, Mode: Pipelined,
		Conns: 100, Size: 128, Inflight: 32, Duration: "10s", Warmup: "2s",
		Connected: 99, Messages: 1234567, WindowSeconds: 10, MessagesPerSecond: 123456.7, Sent: 1500000,
		P50ms: f(0.512), P90ms: f(1.5), P99ms: f(3.25), P999ms: f(7), MaxMs: f(12.125),
		ClientCPUSeconds: 8.456,
		Errors: map[string]tally.Count{
			"dial":     {Count: 1, First: "dial tcp 127.0.0.1:8080: connect: connection refused"},
			"mismatch": {Count: 3, First: "connection 7, message 12: echo differs from the message sent: byte 9 is 0x0, want 0x6a"},
		},
		Judgment: scenario.Judgment[ServerView]{Server: &ServerView{
			Admin: "http://127.0.0.1:9100", Variant: "echo-gorilla",
			CPUSeconds: f(9.5), CPUSource: "stats",
			MessagesReceived: u(1234600), MessagesSent: u(1234599), BytesReceived: u(1), BytesSent: u(1),
			ConnectionsActive: &active,
		}},
	}
}

func TestWriteTable(t *testing.T) {
	t.Parallel()
	got := scenariotest.Text(t, sampleReport().WriteTable)
	want := `echo: 100 connections to ws://127.0.0.1:8080/, 128-byte binary messages, pipelined (32 in flight per connection), 10s after a 2s warmup (gorilla/websocket v1.5.3)
                 client     server (echo-gorilla, http://127.0.0.1:9100)
connected        99 of 100  100 active
messages echoed  1234567    1234600 received, 1234599 sent
msg/s            123457     
p50              0.512ms    
p90              1.500ms    
p99              3.250ms    
p99.9            7.000ms    
max              12.125ms   
cpu seconds      8.46       9.50 (stats)
errors:
         3  mismatch  first: connection 7, message 12: echo differs from the message sent: byte 9 is 0x0, want 0x6a
         1  dial      first: dial tcp 127.0.0.1:8080: connect: connection refused
`
	scenariotest.Equal(t, got, want)
}

func TestWriteTableRateWithoutServer(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	r := &Report{Heading: scenario.Heading{Client: "net (raw TCP)", Version: "go1.26", URL: "tcp://127.0.0.1:7000"}, Mode: Rate, Rate: 5000, Conns: 10, Size: 64,
		Duration: "1s", Warmup: "0s", Connected: 10, BehindSchedule: 17, Interrupted: true, WindowSeconds: 0.25, SendLateP50ms: f(0.25), SendLateP99ms: f(1), SendLateMaxMs: f(2),
		Errors: map[string]tally.Count{}, Judgment: scenario.Judgment[ServerView]{ServerError: "no /stats from http://127.0.0.1:9100: connection refused"}}
	got := scenariotest.Text(t, r.WriteTable)
	scenariotest.HasAll(t, got, "tcp://127.0.0.1:7000, 64-byte messages, rate", "interrupted: the figures cover 0.2s of the window\n", "rate (5000 msg/s in total, latency from each message's due time)", "behind schedule        17",
		"sent late p50/p99/max  0.250ms / 1.000ms / 2.000ms", "p50                    -", "server: no /stats from")
	if strings.Contains(got, "server (") || strings.Contains(got, "errors:") {
		t.Errorf("table shows a server column or errors:\n%s", got)
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	m := scenariotest.JSONObject(t, sampleReport())
	scenariotest.HasFields(t, m, map[string]any{
		"mode": "pipelined", "connections": 100.0, "size": 128.0, "inflight": 32.0, "connected": 99.0, "messages": 1234567.0,
		"messages_per_second": 123456.7, "p50_ms": 0.512, "p99_9_ms": 7.0, "max_ms": 12.125, "client_cpu_seconds": 8.456, "text": false,
	})
	if _, ok := m["rate"]; ok {
		t.Errorf("rate in a pipelined report: %v", m)
	}
	if e := m["errors"].(map[string]any)["mismatch"].(map[string]any); e["count"] != 3.0 || !strings.HasPrefix(e["first"].(string), "connection 7") {
		t.Errorf("errors = %v", m["errors"])
	}
	srv := m["server"].(map[string]any)
	if srv["variant"] != "echo-gorilla" || srv["cpu_seconds"] != 9.5 || srv["cpu_source"] != "stats" || srv["messages_received"] != 1234600.0 {
		t.Errorf("server = %v", srv)
	}
}

// TestReportText: a -text run says so, in the table's heading and in the
// JSON.
func TestReportText(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	r.Text = true
	scenariotest.HasAll(t, scenariotest.Text(t, r.WriteTable), "ws://127.0.0.1:8080/, 128-byte text messages, pipelined")
	scenariotest.HasFields(t, scenariotest.JSONObject(t, r), map[string]any{"text": true, "size": 128.0})
}

// TestShardFiguresText: shards of one run sent the same kind of message;
// a binary and a text report do not merge.
func TestShardFiguresText(t *testing.T) {
	t.Parallel()
	bin, text := sampleReport(), sampleReport()
	text.Text = true
	if bin.shardFigures().Flags == text.shardFigures().Flags || bin.shardFigures().Flags != sampleReport().shardFigures().Flags {
		t.Errorf("flags %v and %v", bin.shardFigures().Flags, text.shardFigures().Flags)
	}
}

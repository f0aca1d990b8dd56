package handshake

import (
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/scenario/scenariotest"
)

func sampleReport() *Report {
	f := func(v float64) *float64 { return &v }
	return &Report{
		Heading:   scenario.Heading{Client: clientName, Version: "v3.0.6", URL: "http://127.0.0.1:8080"},
		Transport: "websocket", Namespace: "/", Deadline: "15s",
		Attempts: 500, Connected: 497, Echoed: 496, Failed: 3,
		Errors:     map[string]int{"deadline exceeded": 2, "HTTP 503 (server at -max-conns)": 1},
		EchoErrors: map[string]int{"deadline exceeded": 1},
		P50ms:      f(12.345), P95ms: f(20), P99ms: f(25.5), MaxMs: f(31.25),
		TotalMs: 250.5, HandshakesPerSecond: 1984.03, ClientCPUSeconds: 0.4213,
		Judgment: scenario.Judgment[ServerView]{Server: &ServerView{
			Admin: "http://127.0.0.1:9100", Variant: "empty",
			Handshakes: map[string]uint64{"ok": 497, "rejected": 0, "failed": 0, "abandoned": 3},
			P50ms:      f(1.5), P99ms: f(9.25), CPUSeconds: f(0.31), ResidentBytes: f(50 << 20),
			MessagesReceived: 496, MessagesSent: 496, Disconnects: map[string]uint64{"client namespace disconnect": 497},
		}},
	}
}

func TestWriteTable(t *testing.T) {
	got := scenariotest.Text(t, sampleReport().WriteTable)
	want := `handshake: 500 connections at once to http://127.0.0.1:8080, namespace /, transport websocket, deadline 15s (zishang520/socket.io-client-go v3.0.6)
              client                    server (empty, http://127.0.0.1:9100)
attempts      500                       
connected     497 (99.4%)               ok 497
failed        3                         rejected 0, failed 0, abandoned 3
echoed        496                       496 events received, 496 sent
p50           12.3ms                    1.5ms
p95           20.0ms                    
p99           25.5ms                    9.2ms
max           31.2ms                    
total         251ms                     
handshakes/s  1984                      
cpu seconds   0.42                      0.31
resident MiB                            50.0
disconnects   497 closed by the client  client namespace disconnect 497
errors:
       2  deadline exceeded
       1  HTTP 503 (server at -max-conns)
echo errors:
       1  deadline exceeded
`
	scenariotest.Equal(t, got, want)
}

func TestWriteTableNoServer(t *testing.T) {
	r := &Report{Heading: scenario.Heading{Client: clientName, Version: "v3.0.6", URL: "http://127.0.0.1:3000"}, Transport: "polling", Namespace: "/", Deadline: "1s",
		Attempts: 2, Failed: 2, Errors: map[string]int{"deadline exceeded": 2}, Judgment: scenario.Judgment[ServerView]{ServerError: "no /stats"}}
	got := scenariotest.Text(t, r.WriteTable)
	scenariotest.HasAll(t, got, "connected     0 (0.0%)", "p50           -", "handshakes/s  0", "       2  deadline exceeded")
	if strings.Contains(got, "server (") || strings.Contains(got, "resident") {
		t.Errorf("table without server shows a server column:\n%s", got)
	}
}

func TestWriteJSON(t *testing.T) {
	m := scenariotest.JSONObject(t, sampleReport())
	// The fields shared with the script clients (scripts/clients/*).
	scenariotest.HasFields(t, m, map[string]any{
		"client": clientName, "attempts": 500.0, "connected": 497.0, "echoed": 496.0, "failed": 3.0,
		"p50_ms": 12.345, "p95_ms": 20.0, "p99_ms": 25.5, "max_ms": 31.25, "total_ms": 250.5,
		"handshakes_per_second": 1984.03, "client_cpu_seconds": 0.4213,
	})
	if e := m["errors"].(map[string]any); e["deadline exceeded"] != 2.0 {
		t.Errorf("errors = %v", e)
	}
	srv := m["server"].(map[string]any)
	if srv["variant"] != "empty" || srv["cpu_seconds"] != 0.31 || srv["p99_ms"] != 9.25 || srv["handshakes"].(map[string]any)["abandoned"] != 3.0 {
		t.Errorf("server = %v", srv)
	}

	// No connection: null percentiles, no server, the reason why.
	r := &Report{Attempts: 1, Failed: 1, Errors: map[string]int{"x": 1}, Judgment: scenario.Judgment[ServerView]{ServerError: "no /stats"}}
	var b strings.Builder
	if err := scenario.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"p50_ms":null`, `"max_ms":null`, `"server_error":"no /stats"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("JSON lacks %s: %s", want, b.String())
		}
	}
	if strings.Contains(b.String(), `"server":`) {
		t.Errorf("JSON has a server view without a server: %s", b.String())
	}
}

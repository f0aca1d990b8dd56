package handshake

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/siotest"
	"github.com/knowngood/knowngood/loadgen/timeline"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, siotest.IgnoreClientGlobals()...)
}

// fakeAdmin serves /stats: the first document before the run, the second
// after it.
func fakeAdmin(t *testing.T, docs ...string) string {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats" {
			http.NotFound(w, r)
			return
		}
		i := min(int(calls.Add(1))-1, len(docs)-1)
		fmt.Fprint(w, docs[i])
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRun(t *testing.T) {
	t.Parallel()
	url := siotest.StartServer(t)
	before := `{"variant":"empty","connections_active":1,"handshakes":{"ok":10},"handshake_histogram":[{"le_us":1000,"n":10}],"cpu_seconds":1.5,"resident_bytes":1000}`
	after := `{"variant":"empty","connections_active":1,"handshakes":{"ok":60,"abandoned":1},"handshake_histogram":[{"le_us":1000,"n":10},{"le_us":2000,"n":50}],"cpu_seconds":2.0,"resident_bytes":2000}`
	for _, transport := range []string{"websocket", "polling", "polling,websocket"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel() // an admin listener for each; the server counts nothing checked here
			// The deadline bounds a stuck run, not the machine's speed:
			// an echo is back in milliseconds, and a lost one never
			// comes (the client once dropped an emit caught by its
			// upgrade to WebSocket: see sioclient's pollingTransport.Write).
			cfg := Config{Common: scenario.Common{URL: url, Admin: fakeAdmin(t, before, after)}, N: 50, Deadline: time.Minute, Transport: transport, Namespace: "/", Echo: true}
			var notes strings.Builder
			rep, err := Run(context.Background(), cfg, &notes)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Connected != 50 || rep.Echoed != 50 || rep.Failed != 0 || len(rep.Errors) != 0 || len(rep.EchoErrors) != 0 {
				t.Errorf("connected %d, echoed %d, failed %d, errors %v, echo errors %v; want 50, 50, 0", rep.Connected, rep.Echoed, rep.Failed, rep.Errors, rep.EchoErrors)
			}
			// The histogram has 1% resolution: its max may exceed the
			// phase's total by that much.
			if rep.P50ms == nil || rep.MaxMs == nil || *rep.P50ms <= 0 || *rep.MaxMs < *rep.P50ms || rep.TotalMs < 0.98**rep.MaxMs {
				t.Errorf("latencies: p50 %v, max %v, total %v", rep.P50ms, rep.MaxMs, rep.TotalMs)
			}
			if n, errs := timeline.Total(rep.Samples); n != 50 || errs != 0 || len(rep.Samples) != int(math.Ceil(rep.TotalMs/1000)) || len(rep.Distribution) == 0 {
				t.Errorf("samples %+v over %vms (%d handshakes, %d errors), distribution %v", rep.Samples, rep.TotalMs, n, errs, rep.Distribution)
			}
			if rep.HandshakesPerSecond <= 0 || rep.ClientCPUSeconds <= 0 {
				t.Errorf("rate %v, cpu %v", rep.HandshakesPerSecond, rep.ClientCPUSeconds)
			}
			s := rep.Server
			if s == nil {
				t.Fatalf("no server view; notes %q", notes.String())
			}
			if s.Handshakes["ok"] != 50 || s.Handshakes["abandoned"] != 1 || s.Handshakes["rejected"] != 0 || s.Variant != "empty" {
				t.Errorf("server view %+v", s)
			}
			if s.CPUSeconds == nil || *s.CPUSeconds != 0.5 || s.P50ms == nil || *s.P50ms < 1.98 || *s.P50ms > 2.02 || s.ResidentBytes == nil || *s.ResidentBytes != 2000 {
				t.Errorf("server cpu %v, p50 %v, resident %v", deref(s.CPUSeconds), deref(s.P50ms), deref(s.ResidentBytes))
			}
			if notes.Len() > 0 {
				t.Errorf("notes: %q", notes.String())
			}
		})
	}
}

func TestRunWithoutServerStats(t *testing.T) {
	t.Parallel()
	url := siotest.StartServer(t)

	// A server without cpu_seconds and resident_bytes.
	doc := `{"variant":"async","handshakes":{"ok":3}}`
	rep, err := Run(context.Background(), Config{Common: scenario.Common{URL: url, Admin: fakeAdmin(t, doc)}, N: 3, Deadline: 5 * time.Second, Transport: "websocket", Namespace: "/"}, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Server == nil || rep.Server.CPUSeconds != nil || rep.Server.ResidentBytes != nil || rep.Server.P50ms != nil {
		t.Errorf("server view without process figures: %+v", rep.Server)
	}

	// No admin listener: one note, and the run goes on.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	var notes strings.Builder
	rep, err = Run(context.Background(), Config{Common: scenario.Common{URL: url, Admin: deadURL}, N: 3, Deadline: 5 * time.Second, Transport: "websocket", Namespace: "/", Echo: true}, &notes)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Connected != 3 || rep.Echoed != 3 || rep.Server != nil || rep.ServerError == "" {
		t.Errorf("connected %d, echoed %d (%v), server %v, server error %q", rep.Connected, rep.Echoed, rep.EchoErrors, rep.Server, rep.ServerError)
	}
	if n := strings.Count(notes.String(), "\n"); n != 1 || !strings.Contains(notes.String(), deadURL) {
		t.Errorf("notes: want one line naming %s, got %q", deadURL, notes.String())
	}

	// Not a knowngood admin listener.
	notes.Reset()
	rep, _ = Run(context.Background(), Config{Common: scenario.Common{URL: url, Admin: fakeAdmin(t, `{"hello":1}`)}, N: 1, Deadline: 5 * time.Second, Transport: "websocket", Namespace: "/"}, &notes)
	if rep.Server != nil || !strings.Contains(rep.ServerError, "not a knowngood /stats document") {
		t.Errorf("server %v, server error %q", rep.Server, rep.ServerError)
	}
}

func TestRunFailures(t *testing.T) {
	url := siotest.StartServer(t)

	// A namespace that refuses: the server's message, for every one.
	rep, err := Run(context.Background(), Config{Common: scenario.Common{URL: url}, N: 5, Deadline: 5 * time.Second, Transport: "websocket", Namespace: "/private", Echo: true}, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Connected != 0 || rep.Failed != 5 || rep.Errors["not allowed"] != 5 || rep.P50ms != nil {
		t.Errorf("connected %d, failed %d, errors %v, p50 %v", rep.Connected, rep.Failed, rep.Errors, rep.P50ms)
	}
	if n, errs := timeline.Total(rep.Samples); n != 0 || errs != 5 {
		t.Errorf("samples %+v, want 5 errors", rep.Samples)
	}

	// A server that never answers: the deadline, counted from the start.
	silent, _ := siotest.StartSilent(t)
	const deadline = 300 * time.Millisecond
	rep, err = Run(context.Background(), Config{Common: scenario.Common{URL: silent}, N: 5, Deadline: deadline, Transport: "polling", Namespace: "/"}, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors["deadline exceeded"] != 5 {
		t.Errorf("errors %v, want 5 deadline exceeded", rep.Errors)
	}
	if total := time.Duration(rep.TotalMs * float64(time.Millisecond)); total < deadline || total > deadline+time.Second {
		t.Errorf("total %v for a deadline of %v", total, deadline)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestErrorKey(t *testing.T) {
	for in, want := range map[string]string{
		"read tcp 127.0.0.1:54321->127.0.0.1:8080: read: connection reset by peer": "read tcp 127.0.0.1->127.0.0.1:8080: read: connection reset by peer",
		"write tcp [::1]:40000->[::1]:8080: broken pipe":                           "write tcp [::1]->[::1]:8080: broken pipe",
		"dial tcp 127.0.0.1:8080: connect: connection refused":                     "dial tcp 127.0.0.1:8080: connect: connection refused",
	} {
		if got := errorKey(fmt.Errorf("%s", in)); got != want {
			t.Errorf("errorKey(%q) = %q, want %q", in, got, want)
		}
	}
}

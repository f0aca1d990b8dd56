package echo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/internal/echotest"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/leaktest"
)

func TestMain(m *testing.M) {
	// Pipelined mode's gnet loops share gnet's package-level worker pool.
	leaktest.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		harness.RemoveBuilds()
		os.Exit(code)
	}))
}

// testConfig is a short run against url, without /stats.
func testConfig(url, mode string) Config {
	return Config{Common: scenario.Common{URL: url}, Conns: 4, Size: 128, Mode: mode, Inflight: 8, Rate: 2000,
		Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond, Timeout: 2 * time.Second}
}

func mustRun(t *testing.T, cfg Config) *Report {
	t.Helper()
	var notes strings.Builder
	rep, err := Run(context.Background(), cfg, &notes)
	if err != nil {
		t.Fatal(err)
	}
	if notes.Len() > 0 {
		t.Errorf("notes: %q", notes.String())
	}
	return rep
}

// TestModes runs every mode against a faithful echo, WebSocket and TCP.
func TestModes(t *testing.T) {
	t.Parallel()
	for name, start := range map[string]func(testing.TB, echotest.Options) *echotest.Server{"ws": echotest.StartWebSocket, "tcp": echotest.StartTCP} {
		t.Run(name, func(t *testing.T) {
			srv := start(t, echotest.Options{})
			// The runs go one after the other, as every run spins on the
			// cores for its window: several at once, on a busy machine,
			// left a run with no echo in its 0.4 s. The connections are
			// counted once every mode has run (a cleanup runs after the
			// subtests, before the server's).
			t.Cleanup(func() {
				if got := srv.Remotes()["127.0.0.1"]; got != 4*(3*3+1) {
					t.Errorf("%s: %d connections, want %d", srv.URL, got, 4*(3*3+1))
				}
			})
			for _, mode := range Modes {
				t.Run(mode, func(t *testing.T) {
					cfg := testConfig(srv.URL, mode)
					for _, size := range []int{128, 3, 40000} { // shorter than a sequence number; longer than the read buffers
						cfg.Size = size
						rep := mustRun(t, cfg)
						if rep.Connected != 4 || len(rep.Errors) != 0 {
							t.Fatalf("size %d: connected %d, errors %v", size, rep.Connected, rep.Errors)
						}
						if rep.Messages == 0 || rep.Sent < rep.Messages || rep.MessagesPerSecond <= 0 || rep.WindowSeconds != 0.4 {
							t.Errorf("size %d: messages %d of %d sent, %v/s over %vs", size, rep.Messages, rep.Sent, rep.MessagesPerSecond, rep.WindowSeconds)
						}
						if rep.P50ms == nil || *rep.P50ms <= 0 || *rep.P90ms < *rep.P50ms || *rep.P99ms < *rep.P90ms || *rep.P999ms < *rep.P99ms || *rep.MaxMs < *rep.P999ms {
							t.Errorf("size %d: percentiles %v %v %v %v %v", size, rep.P50ms, rep.P90ms, rep.P99ms, rep.P999ms, rep.MaxMs)
						}
						if rep.ClientCPUSeconds <= 0 || rep.Server != nil {
							t.Errorf("size %d: client cpu %v, server %v", size, rep.ClientCPUSeconds, rep.Server)
						}
						// 0.4 s: one second, partly; every echo of the window in it.
						if n, errs := timeline.Total(rep.Samples); len(rep.Samples) != 1 || n != rep.Messages || errs != 0 || len(rep.Distribution) == 0 {
							t.Errorf("size %d: samples %+v (%d echoes, %d errors), want %d echoes; distribution %v", size, rep.Samples, n, errs, rep.Messages, rep.Distribution)
						}
						if (mode == Rate) != (rep.SendLateP50ms != nil) {
							t.Errorf("size %d: send lateness %v in mode %s", size, rep.SendLateP50ms, mode)
						}
					}
					if mode == Rate { // 2000/s over 0.4 s: each one echoed, or not sent by the end
						cfg.Size = 128
						if rep := mustRun(t, cfg); rep.Messages+rep.BehindSchedule != 800 || len(rep.Errors) != 0 {
							t.Errorf("rate: %d messages echoed and %d behind schedule in the window, want 800 in all; errors %v", rep.Messages, rep.BehindSchedule, rep.Errors)
						}
					}
				})
			}
		})
	}
}

// TestText: with -text, a knowngood echo target (the process) gets text
// messages and echoes them as text, on the goroutines (sync) and on the
// event loops (pipelined); sizes with the whole sequence number and with
// part of it.
func TestText(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, "-variant", "echo-gorilla")
	for _, mode := range []string{Sync, Pipelined} {
		for _, size := range []int{128, 5} {
			cfg := testConfig("ws://"+tg.Addr+"/", mode)
			cfg.Text, cfg.Size = true, size
			rep := mustRun(t, cfg) // fails on a note: pipelined ran on the loops
			if rep.Connected != 4 || len(rep.Errors) != 0 || rep.Messages == 0 || !rep.Text {
				t.Errorf("%s, %d bytes: connected %d, errors %v, messages %d, text %v", mode, size, rep.Connected, rep.Errors, rep.Messages, rep.Text)
			}
		}
	}
}

// TestPipelinedInflight: a TCP server that reads but echoes nothing for a
// while receives exactly -inflight messages from each connection.
func TestPipelinedInflight(t *testing.T) {
	t.Parallel()
	srv := echotest.StartTCP(t, echotest.Options{HoldFor: 300 * time.Millisecond})
	cfg := testConfig(srv.URL, Pipelined)
	cfg.Conns, cfg.Inflight, cfg.Size, cfg.Warmup = 1, 5, 100, 0
	rep := mustRun(t, cfg)
	if got := srv.HeldBytes.Load(); got != 500 {
		t.Errorf("the server got %d bytes while it echoed nothing, want 5 messages of 100", got)
	}
	if len(rep.Errors) != 0 || rep.Messages < 5 {
		t.Errorf("errors %v, messages %d", rep.Errors, rep.Messages)
	}
}

// TestWrongEchoes: every echo that is not the message sent is a mismatch.
func TestWrongEchoes(t *testing.T) {
	t.Parallel()
	for name, srv := range map[string]*echotest.Server{
		"ws corrupt":      echotest.StartWebSocket(t, echotest.Options{Corrupt: true}),
		"ws text":         echotest.StartWebSocket(t, echotest.Options{Text: true}),
		"ws binary -text": echotest.StartWebSocket(t, echotest.Options{Binary: true}),
		"tcp":             echotest.StartTCP(t, echotest.Options{Corrupt: true}),
	} {
		for _, mode := range []string{Sync, Pipelined} { // goroutines; event loops
			if mode == Pipelined && name == "tcp" {
				continue // the TCP echo corrupts the last byte of each read, not of each message
			}
			t.Run(name+"/"+mode, func(t *testing.T) {
				t.Parallel() // a run's checks are of its own connections
				cfg := testConfig(srv.URL, mode)
				cfg.Text = name == "ws binary -text"
				rep := mustRun(t, cfg)
				m := rep.Errors[kindMismatch]
				if rep.Messages != 0 || m.Count == 0 || int64(m.Count) != rep.Sent || len(rep.Errors) != 1 || rep.P50ms != nil {
					t.Errorf("%s %s: messages %d, sent %d, errors %v, p50 %v", name, mode, rep.Messages, rep.Sent, rep.Errors, rep.P50ms)
				}
				want := "byte 127 is 0x87, want 0x78"
				switch name {
				case "ws text":
					want = "a text message for a binary one"
				case "ws binary -text":
					want = "a binary message for a text one"
				}
				if !strings.Contains(m.First, want) {
					t.Errorf("%s %s: first mismatch %q, want it to say %q", name, mode, m.First, want)
				}
			})
		}
	}
}

// TestLostAndClosed: echoes that never come are lost once -timeout has
// passed after the window; a connection the server closes is a read error.
func TestLostAndClosed(t *testing.T) {
	t.Parallel()
	// Each case is a run against a server of its own: they go at once.
	t.Run("silent", func(t *testing.T) {
		t.Parallel()
		silent := echotest.StartWebSocket(t, echotest.Options{Silent: true})
		cfg := testConfig(silent.URL, Pipelined)
		// -timeout bounds the dials too: a second, not less, so that
		// every connection is made beside the other tests under -race.
		cfg.Timeout = time.Second
		t0 := time.Now()
		rep := mustRun(t, cfg)
		if lost := rep.Errors[kindLost]; lost.Count != 4*8 || rep.Messages != 0 || !strings.Contains(lost.First, "without an echo") {
			t.Errorf("silent server: errors %v, messages %d", rep.Errors, rep.Messages)
		}
		if took := time.Since(t0); took > cfg.Warmup+cfg.Duration+cfg.Timeout+3*time.Second {
			t.Errorf("the run took %v", took)
		}
	})

	for name, start := range map[string]func(testing.TB, echotest.Options) *echotest.Server{"ws": echotest.StartWebSocket, "tcp": echotest.StartTCP} {
		t.Run(name+" closing", func(t *testing.T) {
			t.Parallel()
			srv := start(t, echotest.Options{CloseAfter: 10})
			// Every connection must reach its tenth message within the
			// window: on a fresh machine, with the suite building and
			// running beside it under -race, 400 ms let one of four do
			// so. Five seconds bound a stuck run, not the machine's speed.
			cfg := testConfig(srv.URL, Sync)
			cfg.Duration = 5 * time.Second
			rep := mustRun(t, cfg)
			read := rep.Errors[kindRead]
			if read.Count != 4 || rep.Errors[kindLost].Count != 4 || rep.Sent != 40 {
				t.Errorf("%s closing after 10 messages: errors %v, sent %d", srv.URL, rep.Errors, rep.Sent)
			}
			if strings.HasPrefix(srv.URL, "ws") && !strings.Contains(read.First, "1011") {
				t.Errorf("read error %q does not give the close code", read.First)
			}
			// Pipelined, on the event loops: what was in flight is lost.
			cfg.Mode = Pipelined
			rep = mustRun(t, cfg)
			read = rep.Errors[kindRead]
			if lost := rep.Errors[kindLost].Count; read.Count != 4 || lost == 0 || lost > 4*8 || len(rep.Errors) != 2 {
				t.Errorf("%s pipelined, closing after 10 messages: errors %v, sent %d", srv.URL, rep.Errors, rep.Sent)
			}
			if strings.HasPrefix(srv.URL, "ws") && !strings.Contains(read.First, "1011") {
				t.Errorf("pipelined: read error %q does not give the close code", read.First)
			}
		})
	}

	// Nothing listens: every dial fails, and the report says so.
	t.Run("no server", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		rep := mustRun(t, testConfig("ws://"+addr+"/", Sync))
		if d := rep.Errors[kindDial]; rep.Connected != 0 || d.Count != 4 || !strings.Contains(d.First, "refused") {
			t.Errorf("no server: connected %d, errors %v", rep.Connected, rep.Errors)
		}
	})
}

// TestRateCountsFromDueTime: when the server stalls, rate mode charges the
// stall to every message that was due during it; sync mode, which waits,
// sees one slow message (coordinated omission).
func TestRateCountsFromDueTime(t *testing.T) {
	// Not parallel: sync mode's p90 must stay under 100 ms, which the
	// package's other runs, spinning on the same cores, could push over;
	// it runs before them.
	const stall = 300 * time.Millisecond
	for _, mode := range []string{Rate, Sync} {
		srv := echotest.StartWebSocket(t, echotest.Options{StallAfter: 50, Stall: stall})
		cfg := testConfig(srv.URL, mode)
		cfg.Conns, cfg.Rate, cfg.Warmup, cfg.Duration = 1, 1000, 0, time.Second
		rep := mustRun(t, cfg)
		if len(rep.Errors) != 0 || rep.MaxMs == nil || *rep.MaxMs < float64(stall/time.Millisecond) {
			t.Fatalf("%s: errors %v, max %v ms; want a max of at least the stall", mode, rep.Errors, rep.MaxMs)
		}
		// About 300 of the 1000 rate messages were due during the stall,
		// and 200 of them waited 100 ms or more: over 10%.
		if mode == Rate && *rep.P90ms < 100 {
			t.Errorf("rate: p90 %v ms; the stall was charged to too few messages", *rep.P90ms)
		}
		if mode == Sync && *rep.P90ms >= 100 {
			t.Errorf("sync: p90 %v ms with one stalled message", *rep.P90ms)
		}
	}
}

// blockingConn echoes at once, except that writing message blockAt takes
// block: the messages due meanwhile go out late.
type blockingConn struct {
	blockAt uint64
	block   time.Duration
	n       uint64
	queued  [][]byte
	echoes  chan []byte
	closed  chan struct{}
	once    sync.Once
}

func (c *blockingConn) queue(p []byte) { c.queued = append(c.queued, append([]byte(nil), p...)) }

func (c *blockingConn) flush() error {
	defer func() { c.queued = c.queued[:0] }()
	for _, p := range c.queued {
		if c.n++; c.n == c.blockAt {
			time.Sleep(c.block)
		}
		select {
		case c.echoes <- p:
		case <-c.closed:
			return net.ErrClosed
		}
	}
	return nil
}

func (c *blockingConn) recv(p []byte) (int, error) {
	select {
	case m := <-c.echoes:
		return copy(p, m), nil
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

func (c *blockingConn) close() { c.once.Do(func() { close(c.closed) }) }

// TestRateLatencyFromDueTime: a blocked write delays the messages due
// meanwhile; their latency counts from when they were due, not from when
// they were written, and the sender catches up.
func TestRateLatencyFromDueTime(t *testing.T) {
	// Not parallel: the sender must catch up 300 ms of messages within
	// the window, which the package's other runs, spinning on the same
	// cores, could keep it from; it runs before them.
	const block = 300 * time.Millisecond
	cfg := testConfig("tcp://127.0.0.1:1", Rate)
	// Two seconds: 1.7 s to catch up after the block, room for a machine
	// busy with the other packages' tests.
	cfg.Conns, cfg.Rate, cfg.Warmup, cfg.Duration = 1, 1000, 0, 2*time.Second
	dial := func(context.Context) (msgConn, error) {
		return &blockingConn{blockAt: 100, block: block, echoes: make(chan []byte, 4096), closed: make(chan struct{})}, nil
	}
	rep, err := runDial(context.Background(), cfg, new(strings.Builder), dial)
	if err != nil {
		t.Fatal(err)
	}
	// Every message due is either sent or counted behind. The sender
	// catches up: a sender that skipped what fell due during the block
	// would end 300 behind; one that catches up ends a few behind at most,
	// those a busy host kept it from in the last milliseconds (the bound
	// is a third of the block).
	if len(rep.Errors) != 0 || rep.Messages+rep.BehindSchedule != 2000 || rep.BehindSchedule >= 100 {
		t.Fatalf("errors %v, behind %d, messages %d; want none, under 100, 2000 in all", rep.Errors, rep.BehindSchedule, rep.Messages)
	}
	// 300 of the 2000 messages were due during the block, the 200 first
	// of them 100 ms or more before it ended: p90 is about 100 ms when
	// latency counts from the due time, a few when it does not.
	if *rep.SendLateMaxMs < 250 || *rep.MaxMs < 250 || *rep.P90ms < 50 {
		t.Errorf("sent late up to %v ms, latency p90 %v ms, max %v ms: the late messages were not charged from their due time", *rep.SendLateMaxMs, *rep.P90ms, *rep.MaxMs)
	}
}

// TestServerView: the target's counts and CPU over the window, from
// /stats, or its CPU from /proc with -pid.
func TestServerView(t *testing.T) {
	t.Parallel()
	srv := echotest.StartWebSocket(t, echotest.Options{})
	var calls atomic.Int64
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1) // before, then after
		fmt.Fprintf(w, `{"variant":"echo-test","connections_active":4,"messages_received":%d,"messages_sent":%d,"cpu_seconds":%v}`, 1000*n, 999*n, 1.25*float64(n))
	}))
	defer admin.Close()

	cfg := testConfig(srv.URL, Sync)
	cfg.Admin = admin.URL
	rep := mustRun(t, cfg)
	s := rep.Server
	if s == nil || s.Variant != "echo-test" || *s.MessagesReceived != 1000 || *s.MessagesSent != 999 || *s.CPUSeconds != 1.25 || s.CPUSource != "stats" || *s.ConnectionsActive != 4 {
		t.Fatalf("server view %+v", s)
	}

	cfg.PID = os.Getpid() // this process: it has CPU time to show
	rep = mustRun(t, cfg)
	if s := rep.Server; s == nil || s.CPUSource != "proc" || *s.CPUSeconds < 0 || *s.MessagesReceived != 1000 {
		t.Errorf("server view with -pid %+v", s)
	}

	// No admin listener: one note, and the run goes on.
	cfg.PID = 0
	cfg.Admin = "http://" + srv.URL[len("ws://"):len(srv.URL)-1] // answers 400, not /stats
	var notes strings.Builder
	rep, err := Run(context.Background(), cfg, &notes)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Server != nil || !strings.Contains(rep.ServerError, "no /stats from") || strings.Count(notes.String(), "\n") != 1 || rep.Messages == 0 {
		t.Errorf("server %v, server error %q, notes %q", rep.Server, rep.ServerError, notes.String())
	}
}

// TestInterrupted: a cancelled run stops at once and reports what it did.
func TestInterrupted(t *testing.T) {
	t.Parallel()
	srv := echotest.StartTCP(t, echotest.Options{})
	cfg := testConfig(srv.URL, Pipelined)
	cfg.Duration = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	rep, err := Run(ctx, cfg, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("an interrupted run took %v", took)
	}
	if !rep.Interrupted || rep.WindowSeconds <= 0 || rep.WindowSeconds >= 60 || rep.Messages == 0 || len(rep.Errors) != 0 {
		t.Errorf("window %vs, messages %d, errors %v", rep.WindowSeconds, rep.Messages, rep.Errors)
	}
}

func TestOpenFilesLimit(t *testing.T) {
	t.Parallel()
	cfg := testConfig("tcp://127.0.0.1:1", Sync)
	cfg.Conns = maxConns
	_, err := Run(context.Background(), cfg, new(strings.Builder))
	if err == nil || !strings.Contains(err.Error(), "-c 1000000 is more than the open-files limit allows") {
		t.Skipf("an open-files limit above %d: %v", maxConns, err)
	}
}

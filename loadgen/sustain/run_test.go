package sustain

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/siotest"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/hops"
	"github.com/knowngood/knowngood/shared/protocol"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.RemoveBuilds()
	if code == 0 {
		if err := goleak.Find(siotest.IgnoreClientGlobals()...); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

func config(url, admin string) Config {
	return Config{Common: scenario.Common{URL: url, Admin: admin}, N: 60, Steps: 2, StepDuration: 2 * time.Second,
		EmitMin: 100 * time.Millisecond, EmitMax: 200 * time.Millisecond, Event: "echo", Rooms: 3, PushRate: 20,
		Deadline: 10 * time.Second, AckTimeout: 5 * time.Second, Inflight: 20, Reconnect: true,
		Backoff: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond, Client: ClientLean, Hops: true, Loop: true}
}

// clients are the -client values, each run through the same checks.
var clients = []string{ClientLean, ClientZishang520}

// TestRun: against a knowngood target, each step holds its share, every
// emit is acked, the room pushes arrive, and the server counted the same
// connects.
func TestRun(t *testing.T) {
	t.Parallel()
	for _, target := range []struct {
		name   string
		client string
		args   []string
	}{
		{"lean", ClientLean, nil},
		{"lean-goroutines", ClientLean, nil},
		{"zishang520", ClientZishang520, nil},
		{"lean-native-gnet", ClientLean, []string{"-engine", "native-gnet"}},
	} {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			p := harness.Start(t, append([]string{"-variant", "empty"}, target.args...)...)
			cfg := config("http://"+p.Addr, p.AdminURL())
			cfg.Client = target.client
			cfg.Loop = target.name != "lean-goroutines"
			checkRun(t, cfg)
		})
	}
}

func checkRun(t *testing.T, cfg Config) {
	rep, err := Run(context.Background(), cfg, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	// A step's clients are held or, on a loaded machine, still
	// connecting at its end; the connect figures below show them all
	// connected in the end.
	if len(rep.Steps) != 2 || rep.Steps[0].Held+rep.Steps[0].Connecting != 30 || rep.Steps[1].Held+rep.Steps[1].Connecting != 60 {
		t.Fatalf("steps %+v; want 30 then 60 held or connecting", rep.Steps)
	}
	if rep.Connected != 60 || rep.SuccessPct != 100 || rep.Lost != 0 || rep.Ever != 60 || rep.AckErrors != 0 {
		t.Errorf("connected %d, success %.1f%%, lost %d, ever %d, ack errors %d", rep.Connected, rep.SuccessPct, rep.Lost, rep.Ever, rep.AckErrors)
	}
	// An ack counts in the step it arrives in, which may be the one after
	// its emit's, so only the totals bound acks by emits.
	var emits, acks int64
	for _, s := range rep.Steps {
		emits, acks = emits+s.Emits, acks+s.Acks
		if s.EmitLatency.Count != uint64(s.Acks) {
			t.Errorf("step %d: %d acks, %d latency samples; want the same", s.Step, s.Acks, s.EmitLatency.Count)
		}
	}
	s := rep.Steps[1]
	if s.Acks == 0 || acks > emits || s.PushesSent == 0 || s.PushesReceived == 0 {
		t.Errorf("step 2: %d acks, %d pushes sent, %d received; in all %d emits, %d acks", s.Acks, s.PushesSent, s.PushesReceived, emits, acks)
	}
	if rep.Server == nil || rep.Server.Handshakes[protocol.ResultOK] != 60 {
		t.Fatalf("server view %+v; want 60 handshakes ok", rep.Server)
	}
	// -hops: the emits and pushes of the step split by hop, each hop the
	// target timed also in its own view. One replica: no Redis hop.
	for kind, split := range map[string]map[string]protocol.Distribution{"emit": s.EmitHops, "push": s.PushHops} {
		for _, hop := range []string{hops.ClientToReplica, hops.Replica, hops.ReplicaToClient} {
			if split[hop].Latency.Count == 0 {
				t.Errorf("step 2: no %s timed by hop %s (split %v)", kind, hop, slices.Collect(maps.Keys(split)))
			}
		}
	}
	for _, hop := range []string{hops.ClientToReplica, hops.Replica} {
		if rep.Server.Hops[hop].Latency.Count == 0 {
			t.Errorf("the server's view times no %s hop", hop)
		}
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "60 clients connected at least once") ||
		!strings.Contains(table.String(), "("+cfg.Client+")") {
		t.Errorf("table (%v):\n%s", err, table.String())
	}
}

// TestStillConnecting: a step that ends before its connects have (one
// dialer, each connect 100 ms) counts the rest as connecting, neither
// held nor failed, and the connect running at the last step's end counts
// as made, not failed.
func TestStillConnecting(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, "-variant", "async", "-delay", "100ms")
	cfg := config("http://"+p.Addr, p.AdminURL())
	cfg.N, cfg.Steps, cfg.StepDuration, cfg.Inflight = 10, 1, 300*time.Millisecond, 1
	rep, err := Run(context.Background(), cfg, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Steps[0]
	if s.Connecting == 0 || s.Held+s.Connecting != 10 {
		t.Errorf("held %d, connecting %d; want some of the 10 still connecting, the rest held", s.Held, s.Connecting)
	}
	if rep.SuccessPct != 100 || rep.Connected != int64(rep.Ever) || rep.Lost != 0 {
		t.Errorf("connected %d of %d attempts, %d clients, %d lost; want every attempt made, once per client", rep.Connected, rep.Attempts, rep.Ever, rep.Lost)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), fmt.Sprintf("step 1 ended with %d clients still connecting", s.Connecting)) {
		t.Errorf("table (%v):\n%s", err, table.String())
	}
}

// TestStartAt: the first step starts at -start-at; a shard that comes
// later keeps the schedule, its first step shorter, and says so.
func TestStartAt(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, "-variant", "empty")
	cfg := config("http://"+p.Addr, p.AdminURL())
	cfg.N, cfg.Steps, cfg.StepDuration = 4, 1, time.Second
	cfg.StartAt = time.Now().Add(time.Second)
	begin := time.Now()
	if _, err := Run(context.Background(), cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < 2*time.Second {
		t.Errorf("a 1 s step from 1 s ahead took %s; want at least 2 s", took)
	}
	cfg.StartAt, cfg.StepDuration = time.Now().Add(-2*time.Second), 3*time.Second
	var notes strings.Builder
	rep, err := Run(context.Background(), cfg, &notes)
	if err != nil {
		t.Fatal(err)
	}
	// About 1 s: the 3 s step began 2 s before the run did.
	if w := rep.Steps[0].WindowS; w >= 2.5 {
		t.Errorf("the first step of a run 2 s late: %.1f s; want it cut to about 1 s", w)
	}
	if !strings.Contains(notes.String(), "after -start-at: the first step is that much shorter") {
		t.Errorf("notes %q; want the late start named", notes.String())
	}
}

// TestSources: with -sources, client i dials from address i mod the
// list's length: a relay in front of the target sees each address take
// its share.
func TestSources(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 and up are loopback addresses on Linux only")
	}
	p := harness.Start(t, "-variant", "empty")
	relay, from := relayTo(t, p.Addr)
	cfg := config("http://"+relay, p.AdminURL())
	cfg.Sources = []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	checkRun(t, cfg)
	got := from()
	if len(got) != 2 || got["127.0.0.2"] != 30 || got["127.0.0.3"] != 30 {
		t.Errorf("connections by source address %v; want 30 from each of 127.0.0.2 and 127.0.0.3", got)
	}
}

// relayTo listens on 127.0.0.1, passes every connection on to addr, and
// counts them by the client's address.
func relayTo(t *testing.T, addr string) (listen string, from func() map[string]int) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	seen := map[string]int{}
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			seen[c.RemoteAddr().(*net.TCPAddr).IP.String()]++
			mu.Unlock()
			wg.Go(func() { relay(c, addr) })
		}
	})
	return l.Addr().String(), func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}

// relay copies between c and a new connection to addr until either
// side closes.
func relay(c net.Conn, addr string) {
	defer c.Close()
	up, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		up.Close()
		close(done)
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}

// TestReconnect: the target is killed once every client is connected and
// another takes its address: every client was lost once, comes back after
// its back-off, and counts once.
func TestReconnect(t *testing.T) {
	t.Parallel()
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			t.Parallel() // a target of its own for each
			checkReconnect(t, client)
		})
	}
}

func checkReconnect(t *testing.T, client string) {
	first := harness.Start(t, "-variant", "empty")
	addr := first.Addr
	cfg := config("http://"+addr, "")
	// The step leaves room for the 40 connects and, after the kill, the
	// 40 reconnects on a busy machine; the back-off is at most 400 ms.
	cfg.N, cfg.Steps, cfg.StepDuration, cfg.PushRate = 40, 1, 15*time.Second, 0
	cfg.Client = client
	// No emits: the only events are the joins, which a client sends once
	// it holds its connection, so the server's event count tells when
	// every client does (the server's active count comes sooner, at the
	// CONNECT, while a client may still be inside its connect).
	cfg.EmitMin, cfg.EmitMax = time.Hour, time.Hour
	heldFirst := make(chan int64, 1)
	go func() {
		// Once every client holds its connection to the first target, it
		// dies (SIGKILL, no goodbye) and a second one listens on the same
		// address.
		var active int64
		var joined uint64
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && (active != 40 || joined != 40); {
			time.Sleep(20 * time.Millisecond) // the poll's pace, not an order
			if st, err := first.ReadStats(); err == nil {
				active, joined = st.ConnectionsActive, st.MessagesReceived
			}
		}
		heldFirst <- min(active, int64(joined))
		_ = first.Signal(os.Kill)
		<-first.Exited()
		harness.Start(t, "-variant", "empty", "-addr", addr)
	}()
	rep, err := Run(context.Background(), cfg, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if n := <-heldFirst; n != 40 {
		t.Fatalf("the first target held %d of the 40 clients, joined, 10 s into the step; the check needs all 40 before the kill", n)
	}
	s := rep.Steps[0]
	if s.Lost != 40 || s.Reconnected != 40 || s.Held != 40 || rep.Ever != 40 {
		t.Errorf("lost %d, reconnected %d, held %d, clients %d; want 40 each", s.Lost, s.Reconnected, s.Held, rep.Ever)
	}
}

// TestFlags: bad values name their flag; a shard takes its part.
func TestFlags(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"-emit-interval 5s-1s":                  "-emit-interval",
		"-churn 2":                              "-churn",
		"-push-rate -1":                         "-push-rate",
		"-backoff-max 1ms":                      "-backoff-max",
		"-url ws://x:1/":                        "-url",
		"-client socketio":                      "-client",
		"-sources 127.0.0.2 -client zishang520": "-sources",
		"-sources nowhere":                      "-sources",
		"-start-at 15:04":                       "-start-at",
		"-start-at " + time.Now().Add(2*time.Hour).UTC().Format(time.RFC3339): "-start-at",
	} {
		if _, err := ParseFlags(strings.Fields(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error naming %s", args, err, want)
		}
	}
	cfg, err := ParseFlags([]string{"-n", "100", "-shard", "2/4", "-push-rate", "8", "-admin", ""})
	if err != nil || cfg.N != 25 || cfg.offset != 25 || cfg.PushRate != 2 || cfg.target(9) != 25 {
		t.Errorf("shard 2/4 of 100: %+v, %v", cfg, err)
	}
}

package broadcast_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/broadcast"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/leaktest"
)

func TestMain(m *testing.M) {
	// The subscribers' gnet loops share gnet's package-level worker pool.
	leaktest.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		harness.RemoveBuilds()
		os.Exit(code)
	}))
}

// startTarget runs the knowngood binary as the broadcast variant with the
// extra flags, on free loopback ports; it stops when the test ends.
func startTarget(t *testing.T, variant string, flags ...string) (wsURL, adminURL string) {
	t.Helper()
	p := harness.Start(t, append([]string{"-variant", variant}, flags...)...)
	return "ws://" + p.Addr + "/", p.AdminURL()
}

func parse(t *testing.T, args ...string) broadcast.Config {
	t.Helper()
	cfg, err := broadcast.ParseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestBroadcastMode: every delivery is accounted for, the listenerCount is
// right, and the server's view matches the client's.
func TestBroadcastMode(t *testing.T) {
	t.Parallel()
	url, adm := startTarget(t, "broadcast-gorilla")
	cfg := parse(t, "-url", url, "-admin", adm, "-subscribers", "200", "-senders", "2", "-rate", "40", "-duration", "1s", "-batch", "50")
	rep, err := broadcast.Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Connected != 202 || rep.Sent == 0 || rep.Expected != 202*rep.Sent || rep.Received != rep.Expected || rep.Lost != 0 || rep.Duplicates != 0 {
		t.Fatalf("connected %d, sent %d, expected %d, received %d, lost %d, dups %d", rep.Connected, rep.Sent, rep.Expected, rep.Received, rep.Lost, rep.Duplicates)
	}
	if rep.Results != int64(rep.Sent) || rep.ListenerMismatches != 0 || rep.ListenerCount != 202 {
		t.Errorf("results %d of %d, %d mismatches of listenerCount %d", rep.Results, rep.Sent, rep.ListenerMismatches, rep.ListenerCount)
	}
	if rep.Latency == nil || rep.Latency.Count != rep.Received || rep.ResultRTT == nil {
		t.Errorf("latency %+v over %d deliveries; result rtt %+v", rep.Latency, rep.Received, rep.ResultRTT)
	}
	// 1 s: one second (two when a send raced the window's end), every
	// delivery in it by its send time.
	if n, errs := timeline.Total(rep.Samples); len(rep.Samples) < 1 || len(rep.Samples) > 2 || n != int64(rep.Received) || errs != 0 || len(rep.Distribution) == 0 {
		t.Errorf("samples %+v (%d deliveries, %d errors), want %d; distribution %v", rep.Samples, n, errs, rep.Received, rep.Distribution)
	}
	s := rep.Server
	if s == nil || s.Variant != "broadcast-gorilla" || s.MessagesReceived != rep.Sent || s.MessagesSent < rep.Received+uint64(rep.Results) || s.Dropped != 0 {
		t.Errorf("server view %+v (error %q), want %d received and at least %d sent", s, rep.ServerError, rep.Sent, rep.Received+uint64(rep.Results))
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors: %v", rep.Errors)
	}
}

// TestPushMode: the server's push reaches everyone, in order, none lost.
func TestPushMode(t *testing.T) {
	t.Parallel()
	url, adm := startTarget(t, "broadcast-gnet", "-push-interval", "20ms")
	cfg := parse(t, "-url", url, "-admin", adm, "-subscribers", "100", "-push", "-duration", "500ms")
	rep, err := broadcast.Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pushes < 5 || rep.Expected != 100*rep.Pushes || rep.Received != rep.Expected || rep.Lost != 0 || rep.Duplicates != 0 {
		t.Fatalf("pushes %d, expected %d, received %d, lost %d, dups %d", rep.Pushes, rep.Expected, rep.Received, rep.Lost, rep.Duplicates)
	}
}

// TestNoTarget: a target that is not there is a report of failures, not an
// error.
func TestNoTarget(t *testing.T) {
	t.Parallel()
	cfg := parse(t, "-url", "ws://127.0.0.1:1/", "-admin", "", "-subscribers", "3", "-senders", "1", "-duration", "100ms", "-timeout", "1s")
	rep, err := broadcast.Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Connected != 0 || rep.Failed != 4 || rep.Errors["refused"].Count != 4 {
		t.Errorf("connected %d, failed %d, errors %v", rep.Connected, rep.Failed, rep.Errors)
	}
}

func TestFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-url", "tcp://127.0.0.1:1"}, "needs WebSocket"},
		{[]string{"-url", "ws://127.0.0.1:8080/socket.io/?EIO=4&transport=websocket"}, "is a Socket.IO target's Engine.IO path, where broadcast's WebSocket messages are not Socket.IO events"},
		{[]string{"-push", "-senders", "3"}, "flag -push"},
		{[]string{"-subscribers", "0"}, "-subscribers"},
		{[]string{"-rate", "x"}, "-rate"},
		{[]string{"-sources", "nonsense"}, "-sources"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		_, err := broadcast.ParseFlags(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %q", c.args, err, c.want)
		}
	}
}

// broadcastTargets are the catalog's broadcast variants, for the
// subscriber tests.
var broadcastTargets = func() []string {
	var names []string
	for _, v := range variants.ByFamily(variants.Broadcast) {
		names = append(names, v.Name)
	}
	return names
}()

// TestSubscribersAnswerPings: the subscribers (gnet loops, gobwas/ws
// frames) answer the target's pings. They send nothing else, so the target
// pings them every -ping-interval and drops any that has not answered
// within -ping-timeout, well inside the window. The pushes are small, so
// that a loop answers a ping within milliseconds even on a contended
// machine: the 2 s timeout is margin for a starved process, not for a
// backlog.
func TestSubscribersAnswerPings(t *testing.T) {
	t.Parallel()
	for _, variant := range broadcastTargets {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			url, adm := startTarget(t, variant, "-push-interval", "100ms", "-ping-interval", "50ms", "-ping-timeout", "2s")
			cfg := parse(t, "-url", url, "-admin", adm, "-subscribers", "20", "-push", "-duration", "3s")
			rep, err := broadcast.Run(context.Background(), cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			checkPushes(t, rep, 20)
			if s := rep.Server; s == nil || s.Disconnects["ping_timeout"] != 0 {
				t.Errorf("server view %+v (error %q): want no ping timeouts", s, rep.ServerError)
			}
		})
	}
}

// TestSubscribersReadLargePushes: pushes larger than one read of a
// subscriber's loop (64 KiB) arrive in pieces and are read whole. The
// target does not ping within the window: a loop busy with 70 KiB pushes
// on a contended machine may answer late, which is not what this checks.
// A push every 250 ms, 8 in the window, is enough to show it: the three
// targets run at once, and a faster stream of 70 KiB pushes to each could
// leave the client (under -race, on a busy machine) behind by the whole
// window.
func TestSubscribersReadLargePushes(t *testing.T) {
	t.Parallel()
	for _, variant := range broadcastTargets {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			url, adm := startTarget(t, variant, "-push-interval", "250ms", "-push-size", "71680") // 70 KiB
			cfg := parse(t, "-url", url, "-admin", adm, "-subscribers", "20", "-push", "-duration", "2s")
			rep, err := broadcast.Run(context.Background(), cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			checkPushes(t, rep, 20)
		})
	}
}

// checkPushes: every push of the window reached every subscriber once. A
// few pushes are enough to show it; how many the target managed in the
// window depends on the machine, so it is not checked.
func checkPushes(t *testing.T, rep *broadcast.Report, subscribers int) {
	t.Helper()
	if rep.Pushes < 3 || rep.Expected != uint64(subscribers)*rep.Pushes || rep.Received != rep.Expected || rep.Lost != 0 || rep.Duplicates != 0 || len(rep.Errors) != 0 {
		t.Fatalf("pushes %d, expected %d, received %d, lost %d, dups %d, errors %v", rep.Pushes, rep.Expected, rep.Received, rep.Lost, rep.Duplicates, rep.Errors)
	}
}

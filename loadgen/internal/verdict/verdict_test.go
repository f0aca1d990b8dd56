package verdict_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/verdict"
	"github.com/knowngood/knowngood/shared/protocol"
)

func kinds(vs []verdict.Verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

func stats(ok, rejected, failed, abandoned uint64) *protocol.Stats {
	return &protocol.Stats{Handshakes: map[string]uint64{"ok": ok, "rejected": rejected, "failed": failed, "abandoned": abandoned},
		HandshakeLatency: protocol.Latency{P99: 0.003}}
}

// TestRules: each rule on the figures that make it true, and its text.
func TestRules(t *testing.T) {
	for _, c := range []struct {
		name string
		run  verdict.Run
		kind string
		text string
	}{
		{"client lost", verdict.Run{Attempts: 100, Connected: 39, Server: stats(100, 0, 0, 0)},
			verdict.ClientLost, "the server completed 100 of 100 handshakes (p99 3.0 ms); the client counted 39: the other 61 were lost on the client side"},
		{"never reached", verdict.Run{Attempts: 100, Connected: 71, Server: stats(71, 0, 0, 0)},
			verdict.NeverReached, "the server saw 71 of 100 attempts: 29 never reached it"},
		{"capped", verdict.Run{Attempts: 100, Connected: 50, Server: stats(50, 50, 0, 0), Config: map[string]string{"max-conns": "50"}},
			verdict.Capped, "refused 50 of 100 at its -max-conns 50 cap"},
		{"queued", verdict.Run{Attempts: 100, Connected: 20, Deadline: time.Second, Server: stats(20, 0, 0, 80), Config: map[string]string{"variant": "blocking", "connect": protocol.ConnectSharedLoop, "delay": "50ms"}},
			verdict.Queued, "answering each in its own turn (-blocking-model node, as Node's socket.io): 100 connects need 5s, the client's deadline was 1s, so about 20"},
		{"queued, asyncio", verdict.Run{Attempts: 100, Connected: 2, Deadline: time.Second, Server: stats(2, 0, 0, 98), Config: map[string]string{"variant": "blocking", "connect": protocol.ConnectSharedLoop, "delay": "50ms", "blocking-model": protocol.BlockingAsyncio}},
			verdict.Queued, "(-blocking-model asyncio, as python-socketio on uvicorn): 100 connects need 5s, the client's deadline was 1s, and every ack of the burst leaves after the last, so about 0"},
		// The connect model the target publishes on /health, whatever its name.
		{"queued by connect model", verdict.Run{Attempts: 100, Connected: 20, Deadline: time.Second, Server: stats(20, 0, 0, 80), Config: map[string]string{"variant": "my-loop", "connect": "shared-loop", "delay": "50ms"}},
			verdict.Queued, "froze its one loop 50ms for each connect, answering each in its own turn (-blocking-model node, as Node's socket.io): 100 connects need 5s, the client's deadline was 1s, so about 20"},
		{"mishandled elsewhere", verdict.Run{Attempts: 10, Connected: 10, Server: func() *protocol.Stats {
			s := stats(10, 0, 0, 0)
			s.InteropRequests = map[string]uint64{"chunked_post": 20}
			return s
		}()}, verdict.Interop, "the client sent 20 polling POSTs without Content-Length (Transfer-Encoding: chunked), which python-engineio 4"},
		{"abandoned", verdict.Run{Attempts: 10, Connected: 5, Deadline: time.Second, Server: stats(5, 0, 0, 5)},
			verdict.Abandoned, "the client left 5 handshakes before the server had finished them (its deadline of 1s"},
		{"replies lost", verdict.Run{Sent: 100, Received: 50, Server: &protocol.Stats{MessagesReceived: 100, MessagesSent: 100}},
			verdict.RepliesLost, "the server sent 100 messages and the client counted 50: the other 50 were lost on the client side"},
		{"not delivered", verdict.Run{Sent: 100, Received: -1, Server: &protocol.Stats{MessagesReceived: 60}},
			verdict.NotDelivered, "the client sent 100 messages and the server received 60: 40 never reached it"},
		{"within slack", verdict.Run{Sent: 100, Received: 95, Slack: 10, Server: &protocol.Stats{MessagesReceived: 100, MessagesSent: 100}},
			verdict.Agree, "client and server agree on the messages: the client sent 100, the server received 100; the server sent 100, the client counted 95"},
		{"slow client", verdict.Run{Sent: -1, Received: -1, Lost: 30, Server: &protocol.Stats{BroadcastDropped: 30}, Config: map[string]string{"send-queue": "256", "slow": "drop"}},
			verdict.SlowClient, "the server dropped 30 for connections whose send queue was full (-send-queue 256, -slow drop)"},
		{"faults", verdict.Run{Sent: -1, Received: -1, Server: &protocol.Stats{Faults: map[string]uint64{"reject": 20, "drop": 3}}},
			verdict.Faults, "injected 23 faults on purpose (drop 3, reject 20)"},
		{"saturated", verdict.Run{Sent: -1, Received: -1, ClientCPU: 1.9, Window: time.Second, Cores: 2, ServerCPU: 2},
			verdict.ClientLimited, "the client used 1.90 of the 2.00 CPU seconds it could have had (95%, 2 cores)"},
		{"client heavier", verdict.Run{Sent: -1, Received: -1, ClientCPU: 1.2, Window: time.Second, Cores: 2, ServerCPU: 0.6},
			verdict.ClientLimited, "the client used more CPU (1.20 s) than the target (0.60 s)"},
		{"agree", verdict.Run{Attempts: 50, Connected: 50, Sent: -1, Received: -1, Server: stats(50, 0, 0, 0)},
			verdict.Agree, "client and server agree: 50 of 50 handshakes completed"},
		{"no server", verdict.Run{Attempts: 50, Connected: 10},
			verdict.NoServerView, "no server view"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.run.ClientCPU == 0 && c.run.Cores == 0 {
				c.run.ClientCPU = -1
			}
			vs := verdict.Judge(c.run)
			i := slices.Index(kinds(vs), c.kind)
			if i < 0 {
				t.Fatalf("no %s verdict in %+v", c.kind, vs)
			}
			if !strings.Contains(vs[i].Text, c.text) {
				t.Errorf("%s says %q, want it to contain %q", c.kind, vs[i].Text, c.text)
			}
		})
	}
}

// TestQuiet: a light, clean run has no CPU verdict.
func TestQuiet(t *testing.T) {
	vs := verdict.Judge(verdict.Run{Sent: -1, Received: -1, ClientCPU: 0.02, Window: time.Second, Cores: 2, ServerCPU: 0.01, Server: &protocol.Stats{}})
	if k := kinds(vs); !slices.Equal(k, []string{verdict.Agree}) {
		t.Errorf("verdicts %v, want only agree", k)
	}
}

// TestClientFigures: a client whose figures are unknown, a client that
// claims more than the server saw, and a command that failed.
func TestClientFigures(t *testing.T) {
	unknown := verdict.Run{Attempts: -1, Connected: -1, Sent: -1, Received: -1, ClientCPU: -1, Unknown: true, Server: stats(66, 0, 0, 34)}
	vs := verdict.Judge(unknown)
	if !slices.Equal(kinds(vs), []string{verdict.ClientUnknown}) || !verdict.Unknowing(vs) || verdict.Lost(vs) ||
		vs[0].Text != "the server saw 66 handshakes complete (34 abandoned), 0 messages in and 0 out; client figures unknown: pass -client-json or use a recognised tool; nothing is placed on the client" {
		t.Errorf("unknown figures: %+v", vs)
	}
	failed := unknown
	failed.ExitStatus = 2
	failed.Server = stats(0, 0, 0, 0)
	vs = verdict.Judge(failed)
	if kinds(vs)[0] != verdict.CommandFailed || !strings.HasPrefix(vs[0].Text, "the command failed (exit status 2)") || !verdict.Lost(vs) {
		t.Errorf("failed command: %+v", vs)
	}
	for _, v := range vs {
		if v.Kind == verdict.Agree {
			t.Errorf("failed command: %s", v.Text)
		}
	}
	liar := verdict.Run{Attempts: 100, Connected: 100, Sent: -1, Received: 90, ClientCPU: -1, Unknown: true, Source: "socket.io-client JSON line", Server: stats(60, 0, 0, 0)}
	liar.Server.MessagesSent = 60
	vs = verdict.Judge(liar)
	want := []string{verdict.ClaimsMore, verdict.NeverReached, verdict.ClaimsMore, verdict.ClientUnknown}
	if !slices.Equal(kinds(vs), want) || !strings.Contains(vs[0].Text, "the client claims 100 connected, more than the 60 handshakes the server completed (of 60 it saw): 40 that the server never completed") ||
		!strings.Contains(vs[2].Text, "the client claims 90 messages received, more than the 60 the server sent") {
		t.Errorf("liar: %+v; want kinds %v", vs, want)
	}
	// Only the connections done known (a generic k6 script): judged
	// against what the server saw.
	okOnly := verdict.Run{Attempts: -1, Connected: 10, Sent: -1, Received: -1, ClientCPU: -1, Unknown: true, Source: "k6 summary", Server: stats(10, 0, 0, 0)}
	vs = verdict.Judge(okOnly)
	if !slices.Equal(kinds(vs), []string{verdict.Agree, verdict.ClientUnknown}) {
		t.Errorf("ok only: %+v", vs)
	}
}

// TestUnits: where the client's count and the server's are of different
// units, no loss is found, and the verdict says so. Each case gave a
// false loss before its rule.
func TestUnits(t *testing.T) {
	opened := func(st *protocol.Stats, n uint64) *protocol.Stats { st.ConnectionsTotal = n; return st }
	for _, c := range []struct {
		name   string
		run    verdict.Run
		kind   string
		text   string
		absent []string // kinds that must not be found
	}{
		// 200 Engine.IO sessions held without a namespace CONNECT: the
		// server opened 200, completed no handshake yet. It was "200
		// never reached it" and "claims more".
		{"sessions without CONNECT", verdict.Run{Attempts: 200, Connected: 200, Sent: -1, Received: -1, Server: opened(stats(0, 0, 0, 0), 200)},
			verdict.Unfinished, "the server had opened 200 connections whose handshake had not finished when it was read",
			[]string{verdict.NeverReached, verdict.ClaimsMore, verdict.Agree}},
		// Of 200 counted, 150 completed and 30 still open: 20 remain a
		// claim of the client's.
		{"some unfinished, some claimed", verdict.Run{Attempts: 200, Connected: 200, Sent: -1, Received: -1, Server: opened(stats(150, 0, 0, 0), 180)},
			verdict.ClaimsMore, "the client claims 170 connected, more than the 150 handshakes", nil},
		// Raw TCP connections to a WebSocket target: no upgrade, no
		// handshake; it was "10 never reached it".
		{"tcp to a websocket target", verdict.Run{Attempts: 10, Connected: 10, Unit: verdict.UnitTCP, Sent: -1, Received: -1, Server: stats(0, 0, 0, 0)},
			verdict.Incomparable, "the client counted TCP connections (10 of 10), and this target counts handshakes",
			[]string{verdict.NeverReached, verdict.ClaimsMore}},
		{"tcp messages to a websocket target", verdict.Run{Attempts: 1, Connected: 1, Unit: verdict.UnitTCP, Sent: 5, Received: 0, Server: stats(0, 0, 0, 0)},
			verdict.Incomparable, "went over raw TCP, which this target does not read as messages",
			[]string{verdict.NotDelivered}},
		// echo-tcp: TCP connections against the connections it accepted;
		// it was an unchecked "agree".
		{"echo-tcp accepted all", verdict.Run{Attempts: 10, Connected: 10, Unit: verdict.UnitTCP, Sent: -1, Received: -1, Server: opened(stats(0, 0, 0, 0), 10), Config: map[string]string{"variant": "echo-tcp", "protocol": protocol.ProtocolTCP}},
			verdict.Agree, "client and server agree: 10 of 10 TCP connections accepted", nil},
		{"echo-tcp accepted fewer", verdict.Run{Attempts: 10, Connected: 7, Unit: verdict.UnitTCP, Sent: -1, Received: -1, Server: opened(stats(0, 0, 0, 0), 7), Config: map[string]string{"variant": "echo-tcp", "protocol": protocol.ProtocolTCP}},
			verdict.NeverReached, "the server accepted 7 of 10 TCP connections: 3 never reached it", []string{verdict.Agree}},
		{"echo-tcp reads", verdict.Run{Attempts: 1, Connected: 1, Unit: verdict.UnitTCP, Sent: 100, Received: 100, Server: &protocol.Stats{ConnectionsTotal: 1, MessagesReceived: 37, BytesReceived: 12800, BytesSent: 12800}, Config: map[string]string{"variant": "echo-tcp", "protocol": protocol.ProtocolTCP}},
			verdict.Incomparable, "echo-tcp counts reads, not messages", nil},
		{"raw tcp by protocol", verdict.Run{Attempts: 1, Connected: 1, Unit: verdict.UnitTCP, Sent: 100, Received: 100, Server: &protocol.Stats{ConnectionsTotal: 1, MessagesReceived: 37, BytesReceived: 12800, BytesSent: 12800}, Config: map[string]string{"variant": "my-tcp", "protocol": "tcp"}},
			verdict.Incomparable, "my-tcp counts reads, not messages", nil},
		// A path the target does not serve: 404 before any handshake;
		// it was "5 never reached it".
		{"answered outside handshakes", verdict.Run{Attempts: 5, Connected: 0, Answered: 5, Sent: -1, Received: -1, Server: stats(0, 0, 0, 0)},
			verdict.Outside, "the server answered 5 attempts with an HTTP status and counted no handshake for them", []string{verdict.NeverReached}},
		{"answered at the cap", verdict.Run{Attempts: 10, Connected: 5, Answered: 5, Sent: -1, Received: -1, Server: stats(5, 5, 0, 0)},
			verdict.Rejected, "the server rejected 5 of 10", []string{verdict.Outside, verdict.NeverReached}},
		// -emit-auth: one auth event a socket beside the echo acks; it
		// was "the other 50 were lost on the client side".
		{"auth events", verdict.Run{Attempts: 50, Connected: 50, Sent: 50, Received: 50, Server: &protocol.Stats{Handshakes: map[string]uint64{"ok": 50}, ConnectionsTotal: 50, MessagesReceived: 50, MessagesSent: 100}, Config: map[string]string{"emit-auth": "true"}},
			verdict.Agree, "the server sent 50, the client counted 50 (counts of the whole run, through the last close) (the server's messages sent without the auth event", []string{verdict.RepliesLost}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.run.ClientCPU = -1
			vs := verdict.Judge(c.run)
			if !slices.ContainsFunc(vs, func(v verdict.Verdict) bool { return v.Kind == c.kind && strings.Contains(v.Text, c.text) }) {
				t.Fatalf("no %s verdict saying %q in %+v", c.kind, c.text, vs)
			}
			for _, k := range c.absent {
				if slices.Contains(kinds(vs), k) {
					t.Errorf("a %s verdict in %+v", k, vs)
				}
			}
			if lost := c.kind == verdict.NeverReached || c.kind == verdict.ClaimsMore; verdict.Lost(vs) != lost {
				t.Errorf("loss %v, want %v: %+v", verdict.Lost(vs), lost, vs)
			}
		})
	}
}

package siolite

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/leaktest"
)

func TestMain(m *testing.M) {
	// A Loop's gnet loops share gnet's package-level worker pool.
	leaktest.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		harness.RemoveBuilds()
		os.Exit(code)
	}))
}

// server is one real Socket.IO server the client is checked against.
type server struct {
	name  string
	start func(t *testing.T) (url string, kill func())
}

// knowngood starts a target; kill is SIGKILL, no goodbye.
func knowngood(args ...string) func(t *testing.T) (string, func()) {
	return func(t *testing.T) (string, func()) {
		p := harness.Start(t, append([]string{"-variant", "empty"}, args...)...)
		return "http://" + p.Addr, func() { _ = p.Signal(os.Kill); <-p.Exited() }
	}
}

// node starts Node's socket.io (scripts/node/sio-server.mjs), the
// reference the targets answer as.
func node(t *testing.T) (string, func()) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	p, err := harness.StartProcess(context.Background(), "node socket.io", []string{"node", "../../scripts/node/sio-server.mjs", "0"})
	if err != nil {
		t.Fatalf("%v (npm install in scripts/ first?)", err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return "http://" + p.Addr, func() { _ = p.Signal(os.Kill); <-p.Exited() }
}

// The knowngood servers acknowledge any event (after -ack-delay): an hour
// keeps the ack of an event they do not serve from coming within a test,
// as Node's server never sends one.
var servers = []server{
	{"zishang520", knowngood("-ack-delay", "1h")},
	{"native-nethttp", knowngood("-engine", "native", "-ack-delay", "1h")},
	{"native-gnet", knowngood("-engine", "native-gnet", "-ack-delay", "1h")},
	{"node", node},
}

// onLoop runs test with the connections read on their own goroutines
// and on a Loop; the loop is closed once the test's connections are.
func onLoop(t *testing.T, test func(t *testing.T, loop *Loop)) {
	t.Run("goroutine", func(t *testing.T) { test(t, nil) })
	t.Run("loop", func(t *testing.T) {
		loop, err := NewLoop()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = loop.Close() })
		test(t, loop)
	})
}

func dial(t *testing.T, o Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAgainstServers: against each server, an acked echo carries its
// argument back, a room push reaches the room's members, and a server
// that dies is reported once through OnClose, with the pending ack
// failed rather than left waiting.
func TestAgainstServers(t *testing.T) { onLoop(t, testAgainstServers) }

func testAgainstServers(t *testing.T, loop *Loop) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			url, kill := s.start(t)
			pushes := make(chan []json.RawMessage, 4)
			closed := make(chan error, 2)
			member := dial(t, Options{URL: url, Loop: loop, OnClose: func(err error) { closed <- err },
				OnEvent: func(name string, args []json.RawMessage) {
					if name == "broadcast" {
						pushes <- args
					}
				}})
			defer member.Close()
			sender := dial(t, Options{URL: url, Loop: loop})
			defer sender.Close()
			if member.ID() == "" {
				t.Error("no sid from the CONNECT")
			}

			acked := make(chan error, 1)
			join := func(args []json.RawMessage, err error) { acked <- err }
			if err := member.EmitWithAck("join", []any{"r1"}, join); err != nil {
				t.Fatal(err)
			}
			if err := <-acked; err != nil {
				t.Fatalf("join: %v", err)
			}
			echoed := make(chan string, 1)
			err := sender.EmitWithAck("echo", []any{"hello"}, func(args []json.RawMessage, err error) {
				var got string
				if err == nil && len(args) == 1 {
					_ = json.Unmarshal(args[0], &got)
				}
				echoed <- got
			})
			if err != nil || <-echoed != "hello" {
				t.Fatalf("echo: %v, want hello back", err)
			}
			if err := sender.Emit("broadcast-room", "r1", map[string]any{"t": 1}); err != nil {
				t.Fatal(err)
			}
			select {
			case args := <-pushes:
				if len(args) != 1 || string(args[0]) != `{"t":1}` {
					t.Errorf("push %s; want {\"t\":1}", args)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no push in 10 s")
			}

			// An ack the server will never send, then the server dies.
			failed := make(chan error, 1)
			if err := member.EmitWithAck("no-such-event", nil, func(_ []json.RawMessage, err error) { failed <- err }); err != nil {
				t.Fatal(err)
			}
			kill()
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("OnClose not called 10 s after the server died")
			}
			if err := <-failed; !errors.Is(err, ErrClosed) {
				t.Errorf("pending ack: %v; want ErrClosed", err)
			}
			if len(closed) != 0 {
				t.Error("OnClose called twice")
			}
		})
	}
}

// TestAckTimeout: an ack that does not come fails after AckTimeout, and
// Close drops the acks still pending without calling them.
func TestAckTimeout(t *testing.T) { onLoop(t, testAckTimeout) }

func testAckTimeout(t *testing.T, loop *Loop) {
	url, _ := knowngood("-ack-delay", "1h")(t)
	c := dial(t, Options{URL: url, Loop: loop, AckTimeout: 100 * time.Millisecond})
	got := make(chan error, 1)
	if err := c.EmitWithAck("no-such-event", nil, func(_ []json.RawMessage, err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, ErrAckTimeout) {
		t.Errorf("got %v; want ErrAckTimeout", err)
	}
	c2 := dial(t, Options{URL: url, Loop: loop, AckTimeout: time.Hour})
	if err := c2.EmitWithAck("no-such-event", nil, func([]json.RawMessage, error) { t.Error("ack callback after Close") }); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	c.Close()
	if err := c.Emit("echo"); err == nil {
		t.Error("Emit after Close succeeded")
	}
}

// TestNamespace: a connection joins the namespace it names, and its
// events and acks travel there; Node's server, which serves "/" alone,
// refuses another with its CONNECT_ERROR, which Dial returns.
func TestNamespace(t *testing.T) { onLoop(t, testNamespace) }

func testNamespace(t *testing.T, loop *Loop) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			url, _ := s.start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, Options{URL: url, Loop: loop, Namespace: "/chat"})
			if s.name == "node" {
				if err == nil || !strings.Contains(err.Error(), "Invalid namespace") {
					t.Errorf("Dial to /chat on Node's server: %v; want its connect_error Invalid namespace", err)
				}
				if c != nil {
					c.Close()
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			echoed := make(chan string, 1)
			err = c.EmitWithAck("echo", []any{"in /chat"}, func(args []json.RawMessage, err error) {
				var got string
				if err == nil && len(args) == 1 {
					_ = json.Unmarshal(args[0], &got)
				}
				echoed <- got
			})
			if got := <-echoed; err != nil || got != "in /chat" {
				t.Errorf("echo in /chat: %v, %q back", err, got)
			}
		})
	}
}

// TestDeadline: a server that accepts and never answers gives
// ErrDeadline at the context's deadline; a refused port its own error.
func TestDeadline(t *testing.T) { onLoop(t, testDeadline) }

func testDeadline(t *testing.T, loop *Loop) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, Options{URL: "http://" + l.Addr().String(), Loop: loop}); !errors.Is(err, ErrDeadline) {
		t.Errorf("silent server: %v; want ErrDeadline", err)
	}
	(<-accepted).Close()
	if _, err := Dial(context.Background(), Options{URL: "ws://x"}); err == nil {
		t.Error("ws:// URL accepted")
	}
}

func TestLoopsFor(t *testing.T) {
	for procs, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 16: 8} {
		if got := LoopsFor(procs); got != want {
			t.Errorf("LoopsFor(%d) = %d, want %d", procs, got, want)
		}
	}
}

// TestLoopLag: with a connection on it, the loop is probed every
// lagProbe, and TakeLag hands the probes' wait over and starts again.
func TestLoopLag(t *testing.T) {
	url, _ := knowngood()(t)
	loop, err := NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	c := dial(t, Options{URL: url, Loop: loop})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	var got uint64
	for got < 2 && time.Now().Before(deadline) {
		time.Sleep(lagProbe)
		got += loop.TakeLag().Count
	}
	if got < 2 {
		t.Errorf("%d probes of the loop in 10 s, want some every %v", got, lagProbe)
	}
}

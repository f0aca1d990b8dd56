package broadcast_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/servers/targets"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/leaktest"
	"github.com/knowngood/knowngood/shared/protocol"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		harness.RemoveBuilds()
		os.Exit(code)
	}))
}

// broadcastTarget is a broadcast variant of the catalog with its
// constructor.
type broadcastTarget struct {
	name  string
	build lifecycletest.Build
}

// broadcastTargets returns the broadcast variants of the catalog for which
// every predicate holds.
func broadcastTargets(preds ...func(variants.Variant) bool) []broadcastTarget {
	var out []broadcastTarget
	for _, v := range variants.Where(append(preds, variants.InFamily(variants.Broadcast))...) {
		b, ok := targets.For(v.Name)
		if !ok {
			panic("no constructor for " + v.Name)
		}
		out = append(out, broadcastTarget{v.Name, b})
	}
	return out
}

// forEach runs f as a subtest for every broadcast variant, side by side:
// each has a target of its own on a port of its own.
func forEach(t *testing.T, f func(t *testing.T, name string, b lifecycletest.Build)) {
	for _, v := range broadcastTargets() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			f(t, v.name, v.build)
		})
	}
}

func start(t *testing.T, name string, b lifecycletest.Build, tweak func(*config.Config)) *lifecycletest.Target {
	return lifecycletest.Start(t, name, b, lifecycletest.Options{Tweak: tweak})
}

// client is a gorilla/websocket client that records what it receives.
type client struct {
	c *websocket.Conn

	mu         sync.Mutex
	broadcasts map[string]int // payload -> times received
	order      []string       // broadcast payloads in the order they came
	results    []protocol.BroadcastMessage
	pushes     []uint64
	pushAt     []time.Time                 // when each push arrived
	other      []protocol.BroadcastMessage // echo and error replies
	closeCode  int                         // the server's close code, once read
	done       chan struct{}               // closed when reading has ended
}

// dialer is gorilla's client; rcvbuf, if not 0, shrinks the socket's
// receive buffer so that a client that stops reading backs up early.
func dialer(rcvbuf int) *websocket.Dialer {
	d := &websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	if rcvbuf > 0 {
		nd := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var err error
			_ = rc.Control(func(fd uintptr) { err = setRcvbuf(fd, rcvbuf) })
			return err
		}}
		d.NetDialContext = nd.DialContext
	}
	return d
}

func dial(t testing.TB, url string) *client {
	t.Helper()
	c, _, err := dialer(0).Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, c, nil)
}

// newClient reads c on a goroutine of its own until it ends; with pause
// not nil, reading waits until pause is closed.
func newClient(t testing.TB, c *websocket.Conn, pause <-chan struct{}) *client {
	cl := &client{c: c, broadcasts: map[string]int{}, done: make(chan struct{})}
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		_ = c.Close()
		<-cl.done
	})
	go cl.read(pause, stop)
	return cl
}

func (cl *client) read(pause, stop <-chan struct{}) {
	defer close(cl.done)
	if pause != nil {
		select {
		case <-pause:
		case <-stop:
			return
		}
	}
	for {
		_, data, err := cl.c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				cl.mu.Lock()
				cl.closeCode = ce.Code
				cl.mu.Unlock()
			}
			return
		}
		var msg protocol.BroadcastMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			msg = protocol.BroadcastMessage{Type: "unparsable", Error: string(data)}
		}
		cl.mu.Lock()
		switch msg.Type {
		case protocol.TypeBroadcast:
			cl.broadcasts[string(msg.Payload)]++
			cl.order = append(cl.order, string(msg.Payload))
		case protocol.TypeBroadcastResult:
			cl.results = append(cl.results, msg)
		case protocol.TypePush:
			cl.pushes = append(cl.pushes, msg.Seq)
			cl.pushAt = append(cl.pushAt, time.Now())
		default:
			cl.other = append(cl.other, msg)
		}
		cl.mu.Unlock()
	}
}

func (cl *client) send(t testing.TB, msg string) {
	t.Helper()
	if err := cl.c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// view runs f with the client's records locked.
func (cl *client) view(f func(cl *client)) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	f(cl)
}

func (cl *client) resultCount() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.results)
}

// bye closes the connection with 1000 and waits for the server's answer.
// The close frame gets 10 s: when a thousand clients say bye at once under
// -race beside a CPU hog, a goroutine can wake more than a second after it
// set the deadline, and a close frame never sent leaves the connection
// open and the target rightly counting it.
func (cl *client) bye() {
	_ = cl.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(1000, ""), time.Now().Add(10*time.Second))
	select {
	case <-cl.done:
	case <-time.After(10 * time.Second):
	}
}

// joined waits until the server has a client as a member: its echo comes
// back only once it has joined (the server joins before reading).
func (cl *client) joined(t testing.TB) {
	t.Helper()
	cl.send(t, `{"type":"echo","payload":"joined?"}`)
	lifecycletest.WaitFor(t, "an echo", func() bool {
		n := 0
		cl.view(func(cl *client) { n = len(cl.other) })
		return n > 0
	})
}

// dialMany connects n clients, 50 at a time, and waits until each has joined.
func dialMany(t testing.TB, url string, n int) []*client {
	t.Helper()
	clients := make([]*client, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 50)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, _, err := dialer(0).DialContext(ctx, url, nil)
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				return
			}
			clients[i] = newClient(t, c, nil)
			if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"echo","payload":"joined?"}`)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	lifecycletest.WaitUpTo(t, 30*time.Second, "every client's echo", func() bool {
		for _, cl := range clients {
			n := 0
			cl.view(func(cl *client) { n = len(cl.other) })
			if n == 0 {
				return false
			}
		}
		return true
	})
	return clients
}

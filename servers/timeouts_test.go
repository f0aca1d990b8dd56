package servers

// Time bounds: a client that opens a connection and stops, at any stage,
// on any listener, is closed once that stage's bound has passed, and the
// target counts it.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/protocol"
)

// The bounds the test sets, each 1 s: -handshake-timeout, -idle-timeout,
// -body-timeout, and -ping-interval and -ping-timeout, which bound a
// WebSocket (or an Engine.IO session, or an echo-tcp connection) that
// stays quiet. gnet lingers closeWait (2 s) after a refusal.
const (
	stageBound = time.Second
	quietBound = 2 * stageBound // -ping-interval + -ping-timeout
	// outlives: how long past its bound a connection may stay open before
	// the test calls it held; generous, for a machine busy with other work.
	outlives = 8 * time.Second
)

var boundArgs = []string{
	"-handshake-timeout", "1s", "-idle-timeout", "1s", "-body-timeout", "1s",
	"-ping-interval", "1s", "-ping-timeout", "1s",
}

// stage is one way to stop: what to send, and the bound that must close
// the connection.
type stage struct {
	name  string
	bound time.Duration
	// run opens a connection to addr, stops at the stage, and returns
	// once the server has closed it.
	run func(addr string) error
}

const (
	midHeader   = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
	afterHeader = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
	midBody     = afterHeader + "0123456789"
	wsUpgrade   = "GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)

// dialWriting dials addr and writes data on the new connection.
func dialWriting(addr, data string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, data); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// sends writes data, then reads until the server closes the connection.
func sends(data string) func(addr string) error {
	return func(addr string) error {
		c, err := dialWriting(addr, data)
		if err != nil {
			return err
		}
		defer c.Close()
		return untilClosed(c, bufio.NewReader(c))
	}
}

// untilClosed reads r (c's) until the server ends the connection; an
// error if it is still open after outlives.
func untilClosed(c net.Conn, r *bufio.Reader) error {
	_ = c.SetReadDeadline(time.Now().Add(outlives))
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("still open %v after the stage began", outlives)
	}
	return nil
}

// keepAlive makes a request that is answered with the connection kept
// open, then stays quiet.
func keepAlive(request string) func(addr string) error {
	return func(addr string) error {
		c, err := dialWriting(addr, request)
		if err != nil {
			return err
		}
		defer c.Close()
		r := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(outlives))
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return fmt.Errorf("no answer: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			return fmt.Errorf("answered %s with Connection: close; want keep-alive", resp.Status)
		}
		return untilClosed(c, r)
	}
}

// quietWebSocket upgrades on path and then reads only: it answers no ping.
func quietWebSocket(path string) func(addr string) error {
	return func(addr string) error {
		c, err := dialWriting(addr, fmt.Sprintf(wsUpgrade, path))
		if err != nil {
			return err
		}
		defer c.Close()
		r := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(outlives))
		if line, err := r.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 101") {
			return fmt.Errorf("upgrade answered %q, %v", line, err)
		}
		return untilClosed(c, r)
	}
}

// pollingOpen opens an Engine.IO session over polling on c and returns
// its sid.
func pollingOpen(c net.Conn, r *bufio.Reader) (string, error) {
	if _, err := c.Write([]byte("GET /socket.io/?EIO=4&transport=polling HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(outlives))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return "", err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(body) == 0 || body[0] != '0' {
		return "", fmt.Errorf("open answered %s %q, %v", resp.Status, body, err)
	}
	var open struct{ Sid string }
	if err := json.Unmarshal(body[1:], &open); err != nil || open.Sid == "" {
		return "", fmt.Errorf("open packet %q: %v", body, err)
	}
	return open.Sid, nil
}

// quietPolling opens an Engine.IO session over polling, then never polls
// again: its connection goes at -idle-timeout, its session at the ping
// timeout.
func quietPolling(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := pollingOpen(c, r); err != nil {
		return err
	}
	return untilClosed(c, r)
}

// tricklingPost opens an Engine.IO session over polling, then sends a
// POST to it whose body stops a tenth of the way in.
func tricklingPost(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	sid, err := pollingOpen(c, r)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c, "POST /socket.io/?EIO=4&transport=polling&sid=%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n4hello", sid); err != nil {
		return err
	}
	return untilClosed(c, r)
}

// boundStages are the stages of each listener of variant: its target
// port, then its admin port; and the timeouts the target must count for
// them, by listener and stage.
func boundStages(variant string) (target, admin []stage, want map[string]map[string]uint64) {
	admin = []stage{
		{"mid-header", stageBound, sends(midHeader)},
		{"after the header", stageBound, sends(afterHeader)},
		{"mid-body", stageBound, sends(midBody)},
		{"idle keep-alive", stageBound, keepAlive("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")},
	}
	want = map[string]map[string]uint64{"admin": {"header": 1, "body": 2, "idle": 1}}
	switch {
	case isSocketIO(variant):
		target = []stage{
			{"mid-header", stageBound, sends(midHeader)},
			{"after the header", stageBound, sends(afterHeader)},
			{"mid-body", stageBound, sends(midBody)},
			{"trickling polling POST", stageBound, tricklingPost},
			{"idle keep-alive", stageBound, keepAlive("GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")},
			{"idle polling session", stageBound, quietPolling},
			{"quiet WebSocket", quietBound, quietWebSocket("/socket.io/?EIO=4&transport=websocket")},
		}
		want["target"] = map[string]uint64{"header": 1, "body": 3, "idle": 2}
	case isRawTCP(variant):
		// No headers: whatever comes is echoed, then the connection is
		// quiet.
		target = []stage{
			{"bytes, then quiet", quietBound, sends(midHeader)},
			{"nothing sent", quietBound, sends("")},
		}
		want["target"] = map[string]uint64{"idle": 2}
	case row(variant).Library == variants.Gnet:
		// gnet answers a request that is not an upgrade as soon as its
		// header is in, without reading a body, and drops what follows
		// for closeWait (2 s).
		target = []stage{
			{"mid-header", stageBound, sends(midHeader)},
			{"after the header", 2 * time.Second, sends(afterHeader)},
			{"mid-body", 2 * time.Second, sends(midBody)},
			{"quiet WebSocket", quietBound, quietWebSocket("/")},
		}
		want["target"] = map[string]uint64{"header": 1}
	default: // gorilla and coder: a request that is not an upgrade is refused with Connection: close
		target = []stage{
			{"mid-header", stageBound, sends(midHeader)},
			{"after the header", stageBound, sends(afterHeader)},
			{"mid-body", stageBound, sends(midBody)},
			{"quiet WebSocket", quietBound, quietWebSocket("/")},
		}
		want["target"] = map[string]uint64{"header": 1, "body": 2}
	}
	return target, admin, want
}

// TestTimeBounds: on every variant family and library, on the target and
// the admin port, a connection stopped at each stage is closed within a
// few seconds of its bound (set to 1-2 s here: today's defaults are
// Node's), and counted in timeouts (and the quiet sessions in disconnects).
func TestTimeBounds(t *testing.T) {
	t.Parallel()
	for _, v := range onePerFamilyAndLibrary() {
		for _, r := range runsOf(v) {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel()
				s := startServer(t, append(r.args, boundArgs...)...)
				before := statsNoKeepAlive(t, s)
				target, admin, want := boundStages(v)
				onLoops := strings.HasSuffix(r.name, "/"+nativeGnet)
				if onLoops {
					target, want["target"] = gnetSocketIOStages()
				}
				var wg sync.WaitGroup
				for _, l := range []struct {
					name   string
					addr   string
					stages []stage
				}{
					{"target", strings.TrimPrefix(s.url, "http://"), target},
					{"admin", strings.TrimPrefix(s.admin, "http://"), admin},
				} {
					for _, st := range l.stages {
						wg.Go(func() {
							began := time.Now()
							if err := st.run(l.addr); err != nil {
								t.Errorf("%s port, %s (bound %v): %v", l.name, st.name, st.bound, err)
								return
							}
							t.Logf("%s port, %s: closed after %v (bound %v)", l.name, st.name, time.Since(began).Round(time.Millisecond), st.bound)
						})
					}
				}
				wg.Wait()
				// The server counts a close right after it has closed: wait
				// for the counts, then check that none is over.
				var d protocol.Stats
				for end := time.Now().Add(outlives); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					d = protocol.Diff(before, statsNoKeepAlive(t, s))
					if reached(d.Timeouts, want) && d.ConnectionsActive == 0 && quietCounted(v, onLoops, d) {
						break
					}
				}
				for listener, stages := range want {
					for stage, n := range stages {
						if got := d.Timeouts[listener][stage]; got != n {
							t.Errorf("timeouts{listener=%s,stage=%s} %d, want %d (all: %v)", listener, stage, got, n, d.Timeouts)
						}
					}
				}
				if d.ConnectionsActive != 0 {
					t.Errorf("%d connections still active, want none: %+v", d.ConnectionsActive, d)
				}
				if !quietCounted(v, onLoops, d) {
					t.Errorf("disconnects %v: want the quiet WebSocket (and Engine.IO polling session) as ping timeouts", d.Disconnects)
				}
			})
		}
	}
}

// quietCounted reports whether the quiet sessions are counted: the quiet
// polling session and the quiet WebSocket as ping timeouts on Socket.IO,
// the quiet WebSocket as ping_timeout on the WebSocket targets, both
// quiet connections as idle_timeout on echo-tcp. onLoops: the native
// engine's gnet transport, which holds no polling session.
func quietCounted(variant string, onLoops bool, d protocol.Stats) bool {
	switch {
	case isSocketIO(variant) && onLoops:
		return d.Disconnects["ping timeout"] >= 1
	case isSocketIO(variant):
		return d.Disconnects["ping timeout"] >= 2
	case isRawTCP(variant):
		return d.Disconnects["idle_timeout"] == 2
	}
	return d.Disconnects["ping_timeout"] == 1
}

func reached(got, want map[string]map[string]uint64) bool {
	for listener, stages := range want {
		for stage, n := range stages {
			if got[listener][stage] < n {
				return false
			}
		}
	}
	return true
}

// statsNoKeepAlive reads /stats on a connection of its own, closed after:
// a kept-alive one would be closed by -idle-timeout and counted.
func statsNoKeepAlive(t *testing.T, s *server) protocol.Stats {
	t.Helper()
	return s.statsWith(t, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: outlives})
}

// TestLongPollOutlivesBounds: with every HTTP bound shorter than the ping
// interval, an Engine.IO long-polling GET is held until the ping, as it
// should be, and a WebSocket client that answers pings stays.
func TestLongPollOutlivesBounds(t *testing.T) { forEngines(t, testLongPollOutlivesBounds) }

func testLongPollOutlivesBounds(t *testing.T, engine string) {
	s := startServer(t, "-variant", "empty", "-engine", engine, "-handshake-timeout", "300ms", "-idle-timeout", "300ms",
		"-body-timeout", "300ms", "-ping-interval", "2s", "-ping-timeout", "5s")
	addr := strings.TrimPrefix(s.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	sid, err := pollingOpen(c, r)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := fmt.Fprintf(c, "GET /socket.io/?EIO=4&transport=polling&sid=%s HTTP/1.1\r\nHost: x\r\n\r\n", sid); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(outlives))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("long poll: %v after %v", err, time.Since(began))
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "2" {
		t.Errorf("long poll answered %s %q after %v; want the ping (2)", resp.Status, body, time.Since(began))
	}
	t.Logf("long poll held %v, bounds 300ms, ping interval 2s", time.Since(began).Round(time.Millisecond))

	p, err := connect("empty", addr, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Past two ping intervals, far past every HTTP bound.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if err := p.echo("still here"); err != nil {
			t.Fatalf("WebSocket client: %v", err)
		}
	}
}

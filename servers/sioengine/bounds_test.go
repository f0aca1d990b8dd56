package sioengine

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestConnectTimeoutKeepsTheHeartbeat: a polling session whose client
// has gone, closed by the connect timeout from the heartbeat's timer (the
// two due together, as with the defaults), still ends: the heartbeat goes
// on and times it out, as Node's does. Before, it stayed closing, and
// counted active, until a request named it.
func TestConnectTimeoutKeepsTheHeartbeat(t *testing.T) {
	o := testOptions()
	o.ConnectTimeout = 50 * time.Millisecond
	reasons := closeReasons(&o, 1)
	e := startEngine(t, o)
	_, c := openPollingConn(t, e)
	c.mu.Lock()
	c.heartbeat.Stop()
	c.connectTmr.Stop() // it stands for a timer that has not run yet
	c.mu.Unlock()
	time.Sleep(o.ConnectTimeout) // the connect timeout is due
	c.beat()                     // and the heartbeat's timer runs first
	wantClosedWith(t, reasons, "ping timeout")
	if n := e.Len(); n != 0 {
		t.Errorf("%d sessions held after the ping timeout", n)
	}
}

// TestVanishedPollingClientsEnd: polling clients that leave right after
// the handshake are all closed, and counted, with the connect timeout due
// together with the ping timeout (pingInterval + pingTimeout, as the
// defaults are), where the two timers run in either order.
func TestVanishedPollingClientsEnd(t *testing.T) {
	const sessions = 40
	o := testOptions()
	o.PingInterval, o.PingTimeout, o.ConnectTimeout = 100*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond
	reasons := closeReasons(&o, sessions)
	e := startEngine(t, o)
	for range sessions {
		openPolling(t, e)
	}
	for i := range sessions {
		select {
		case <-reasons:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d sessions closed; %d still held", i, sessions, e.Len())
		}
	}
}

// TestShutdownDiscardsIdlePolling: on Close, a polling session that has
// nothing left to write and no long-poll pending ends at once, as Node's
// engine.io discards it, rather than waiting for a GET that a client gone
// never sends; one with a long-poll pending gets the close packet.
func TestShutdownDiscardsIdlePolling(t *testing.T) {
	o := testOptions()
	o.PingInterval, o.PingTimeout = time.Minute, time.Minute // no heartbeat ends it
	reasons := closeReasons(&o, 2)
	e := startEngine(t, o)
	openPolling(t, e)
	sid, c := openPollingConn(t, e)
	polled := make(chan string, 1)
	go func() {
		resp, err := http.Get(e.url + "&transport=polling&sid=" + sid)
		if err != nil {
			polled <- err.Error()
			return
		}
		defer resp.Body.Close()
		polled <- fmt.Sprint(resp.StatusCode)
	}()
	waitUntil(t, "a long-poll pending", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.poll != nil
	})
	// The bound: a session left waiting would hold Close for all of ctx.
	const within = 10 * time.Second
	ctx, cancel := contextTimeout(within)
	defer cancel()
	began := time.Now()
	e.Close(ctx)
	if took := time.Since(began); took >= within {
		t.Errorf("Close took %v: a session waited for its context", took)
	}
	if got := <-polled; got != "200" {
		t.Errorf("the pending long-poll: %s, want 200 (the close packet)", got)
	}
	wantClosedWith(t, reasons, "forced close")
	wantClosedWith(t, reasons, "forced close")
}

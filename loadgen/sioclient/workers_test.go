package sioclient_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zishang520/socket.io/clients/socket/v3"

	"github.com/knowngood/knowngood/loadgen/internal/siotest"
	"github.com/knowngood/knowngood/loadgen/sioclient"
)

// Jobs run once each, a worker serves the next job once idle, and Close
// ends the idle ones (the leak check of TestMain sees any left).
func TestWorkersRunEveryJob(t *testing.T) {
	var w sioclient.Workers
	const n = 200
	var wg sync.WaitGroup
	wg.Add(n)
	ran := make([]int, n)
	for i := range n {
		w.Go(func() {
			ran[i]++
			wg.Done()
		})
	}
	wg.Wait()
	for i, r := range ran {
		if r != 1 {
			t.Fatalf("job %d ran %d times", i, r)
		}
	}
	w.Close()
	done := make(chan struct{})
	w.Go(func() { close(done) }) // after Close: still runs
	<-done

	var nilWorkers *sioclient.Workers
	done2 := make(chan struct{})
	nilWorkers.Go(func() { close(done2) })
	<-done2
}

// Await reports what Wait would: connected, with the connections' dials
// on shared workers.
func TestAwaitConnects(t *testing.T) {
	url := siotest.StartServer(t)
	workers := &sioclient.Workers{}
	defer workers.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const n = 20
	conns := make([]*sioclient.Conn, n)
	errs := make(chan error, n)
	for i := range n {
		c, err := sioclient.Dial(sioclient.Options{URL: url, Transport: sioclient.WebSocket, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		c.Await(ctx, func(err error) { errs <- err })
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Await: %v", err)
		}
	}
	for _, c := range conns {
		if c.ID() == "" {
			t.Error("connected without an id")
		}
		if err := c.Echo(ctx, "x"); err != nil {
			t.Errorf("Echo: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// Await reports ErrDeadline once, for a server that never answers, and
// starts closing the connection.
func TestAwaitDeadline(t *testing.T) {
	silent, _ := siotest.StartSilent(t)
	c, err := sioclient.Dial(sioclient.Options{URL: silent, Transport: sioclient.Polling})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	errs := make(chan error, 2)
	c.Await(ctx, func(err error) { errs <- err })
	if err := <-errs; !errors.Is(err, sioclient.ErrDeadline) {
		t.Errorf("Await: got %v, want ErrDeadline", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-errs:
		t.Errorf("a second outcome: %v", err)
	default:
	}
}

// Await after the outcome is in (most likely: it is called once the
// client has seen the CONNECT) still reports it, once.
func TestAwaitAfterOutcome(t *testing.T) {
	url := siotest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	connected := make(chan struct{})
	c, err := sioclient.Dial(sioclient.Options{URL: url, Transport: sioclient.WebSocket, OnSocket: func(s *socket.Socket) {
		s.Once("connect", func(...any) { close(connected) })
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-connected
	errs := make(chan error, 2)
	c.Await(ctx, func(err error) { errs <- err })
	if err := <-errs; err != nil {
		t.Errorf("Await: %v", err)
	}
	select {
	case err := <-errs:
		t.Errorf("a second outcome: %v", err)
	default:
	}
}

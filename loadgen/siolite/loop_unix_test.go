//go:build unix

package siolite

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
)

// TestLoopNoPing: a server that stops (SIGSTOP) sends no more pings, and
// the loop's sweep ends its connection once the ping interval and
// timeout have passed, though probeLag wakes that connection every
// lagProbe meanwhile.
func TestLoopNoPing(t *testing.T) {
	p := harness.Start(t, "-variant", "empty", "-ping-interval", "100ms", "-ping-timeout", "100ms")
	t.Cleanup(func() { _ = p.Signal(syscall.SIGCONT) })
	loop, err := NewLoop()
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	closed := make(chan error, 1)
	c := dial(t, Options{URL: "http://" + p.Addr, Loop: loop, OnClose: func(err error) { closed <- err }})
	defer c.Close()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		if !errors.Is(err, errNoPing) {
			t.Errorf("closed with %v, want %v", err, errNoPing)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection to a stopped server was still open after 10 s")
	}
}

package conns_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/internal/conns"
)

// TestDrainGoAway: peers that leave when told make Drain return at once,
// and a closing registry refuses newcomers.
func TestDrainGoAway(t *testing.T) {
	r := conns.NewRegistry[int]()
	for p := range 3 {
		r.Add(p)
	}
	var told []int
	goAway := func(p int) { told = append(told, p); r.Remove(p) }
	kill := func(p int) { t.Errorf("peer %d killed, though it left when told", p) }
	if err := conns.Drain(context.Background(), r, goAway, kill); err != nil {
		t.Fatal(err)
	}
	if slices.Sort(told); !slices.Equal(told, []int{0, 1, 2}) {
		t.Errorf("told %v, want every peer", told)
	}
	if r.Add(9) {
		t.Error("a closing registry took a new peer")
	}
}

// TestDrainKillsStayers: a peer that ignores the go-away is killed once
// half the time left has passed, and Drain returns when it is gone.
func TestDrainKillsStayers(t *testing.T) {
	r := conns.NewRegistry[string]()
	r.Add("stayer")
	killed := make(chan string, 1)
	kill := func(p string) { killed <- p; r.Remove(p) }
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := conns.Drain(ctx, r, func(string) {}, kill); err != nil {
		t.Fatal(err)
	}
	if got := <-killed; got != "stayer" {
		t.Errorf("killed %q", got)
	}
}

// TestDrainTimesOut: a peer that survives even the kill makes Drain
// return the context's error.
func TestDrainTimesOut(t *testing.T) {
	r := conns.NewRegistry[int]()
	r.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := conns.Drain(ctx, r, func(int) {}, func(int) {}); err != context.DeadlineExceeded {
		t.Errorf("Drain: %v, want %v", err, context.DeadlineExceeded)
	}
}

func TestAcceptBackoff(t *testing.T) {
	var got []time.Duration
	for d := time.Duration(0); len(got) < 10; {
		d = conns.AcceptBackoff(d)
		got = append(got, d)
	}
	if got[0] != 5*time.Millisecond || got[1] != 10*time.Millisecond || got[9] != time.Second {
		t.Errorf("backoff %v: want 5ms doubling up to 1s", got)
	}
}

func TestAcceptErrorReason(t *testing.T) {
	for err, want := range map[error]string{
		&net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}: "EMFILE",
		fmt.Errorf("wrapped: %w", syscall.ENFILE):                                      "ENFILE",
		io.EOF: "other",
	} {
		if got := conns.AcceptErrorReason(err); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}

func TestClientLeft(t *testing.T) {
	for err, want := range map[error]bool{
		io.EOF:              true,
		io.ErrUnexpectedEOF: true,
		&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}: true,
		fmt.Errorf("write: %w", syscall.EPIPE):                                        true,
		os.ErrDeadlineExceeded:                                                        false,
	} {
		if got := conns.ClientLeft(err); got != want {
			t.Errorf("%v: %v, want %v", err, got, want)
		}
	}
}

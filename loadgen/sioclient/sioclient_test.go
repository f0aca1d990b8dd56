package sioclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/loadgen/internal/siotest"
	"github.com/knowngood/knowngood/loadgen/sioclient"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, siotest.IgnoreClientGlobals()...)
}

func TestConnectEchoClose(t *testing.T) {
	url := siotest.StartServer(t)
	for _, transport := range sioclient.Transports {
		t.Run(transport, func(t *testing.T) {
			const n = 20
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					c, err := sioclient.Connect(ctx, sioclient.Options{URL: url, Transport: transport})
					if err != nil {
						errs[i] = fmt.Errorf("connect: %w", err)
						return
					}
					if c.ID() == "" {
						errs[i] = errors.New("connected without an id")
					} else if err := c.Echo(ctx, "hello"); err != nil {
						errs[i] = fmt.Errorf("echo: %w", err)
					}
					if err := c.Close(); err != nil && errs[i] == nil {
						errs[i] = err
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("connection %d: %v", i, err)
				}
			}
		})
	}
}

func TestConnectError(t *testing.T) {
	url := siotest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sioclient.Connect(ctx, sioclient.Options{URL: url, Namespace: "/private", Transport: sioclient.WebSocket})
	if err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("Connect to a namespace that refuses: got %v, want the server's message", err)
	}
}

func TestRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	for _, transport := range sioclient.Transports {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		_, err := sioclient.Connect(ctx, sioclient.Options{URL: url, Transport: transport})
		cancel()
		// The client's own handling reported a refused dial only at its
		// open timeout (20 s); it must come at once.
		if err == nil || errors.Is(err, sioclient.ErrDeadline) {
			t.Errorf("%s: Connect to a closed port: got %v, want the dial's error", transport, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: the refusal took %v", transport, d)
		}
	}
}

func TestDeadline(t *testing.T) {
	for _, transport := range sioclient.Transports {
		t.Run(transport, func(t *testing.T) {
			// A server that takes the request and never answers it.
			silent, unblock := siotest.StartSilent(t)

			dial := func(closeTimeout time.Duration) *sioclient.Conn {
				c, err := sioclient.Dial(sioclient.Options{URL: silent, Transport: transport, CloseTimeout: closeTimeout})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				if err := c.Wait(ctx); !errors.Is(err, sioclient.ErrDeadline) {
					t.Errorf("Wait: got %v, want ErrDeadline", err)
				}
				return c
			}
			c := dial(5 * time.Second)
			if transport == sioclient.WebSocket {
				// The dial waits for an upgrade that never comes, and
				// the client's dialer has no timeout: Close gives up.
				c2 := dial(100 * time.Millisecond)
				if err := c2.Close(); !errors.Is(err, sioclient.ErrStillClosing) {
					t.Errorf("Close during a dial that hangs: got %v, want ErrStillClosing", err)
				}
			}
			// Let the handlers answer, so that every dial and poll
			// returns and every goroutine can end.
			unblock()
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, o := range []sioclient.Options{
		{URL: "127.0.0.1:8080", Transport: sioclient.WebSocket},
		{URL: "ws://127.0.0.1:8080", Transport: sioclient.WebSocket},
		{URL: "http://127.0.0.1:8080", Transport: "webtransport"},
		{URL: "http://127.0.0.1:8080", Transport: ""},
		{URL: "http://127.0.0.1:8080", Transport: sioclient.WebSocket, Namespace: "custom"},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
}

// TestEchoAcrossUpgrade emits back to back from the moment each connection
// opens over polling, so that emits are in flight while the client upgrades
// to WebSocket: every one must be answered (see pollingTransport.Write for
// the emit an upgrade used to drop).
func TestEchoAcrossUpgrade(t *testing.T) {
	url := siotest.StartServer(t)
	const conns, echoes = 30, 30
	// Bounds a lost echo, not the machine's speed: an answered one is
	// back in milliseconds.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, conns)
	for i := range conns {
		wg.Go(func() {
			c, err := sioclient.Connect(ctx, sioclient.Options{URL: url, Transport: sioclient.PollingWebSocket})
			if err != nil {
				errs[i] = fmt.Errorf("connect: %w", err)
				return
			}
			defer c.Close()
			// Three emitters, so that emits queue while a POST is out
			// and the flush on its drain races the upgrade too.
			var emitters sync.WaitGroup
			lost := make([]error, 3)
			for e := range lost {
				emitters.Go(func() {
					for j := range echoes / len(lost) {
						if err := c.Echo(ctx, fmt.Sprint(e, j)); err != nil {
							lost[e] = fmt.Errorf("echo %d of emitter %d: %w", j, e, err)
							return
						}
					}
				})
			}
			emitters.Wait()
			errs[i] = errors.Join(lost...)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("connection %d: %v", i, err)
		}
	}
}

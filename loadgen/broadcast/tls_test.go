package broadcast_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/broadcast"
	"github.com/knowngood/knowngood/loadgen/internal/tlstest"
	"github.com/knowngood/knowngood/scripts/harness"
)

// TestTLS: over wss:// the subscribers read on goroutines of their own,
// not on the gnet loops; every delivery is accounted for, in both modes,
// and nothing is left running (TestMain's goleak).
func TestTLS(t *testing.T) {
	t.Parallel()
	cert, key := tlstest.Cert(t)
	p := harness.Start(t, "-variant", "broadcast-gnet", "-tls-cert", cert, "-tls-key", key, "-push-interval", "20ms")
	url := "wss://" + p.Addr + "/"
	cfg := parse(t, "-url", url, "-admin", p.AdminURL(), "-ca", cert, "-subscribers", "50", "-senders", "2", "-rate", "40", "-duration", "500ms", "-batch", "20")
	rep, err := broadcast.Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Connected != 52 || rep.Sent == 0 || rep.Expected != 52*rep.Sent || rep.Received != rep.Expected || rep.Lost != 0 || len(rep.Errors) != 0 {
		t.Errorf("broadcast: connected %d, sent %d, expected %d, received %d, lost %d, errors %v", rep.Connected, rep.Sent, rep.Expected, rep.Received, rep.Lost, rep.Errors)
	}
	if s := rep.Server; s == nil || s.MessagesReceived != rep.Sent {
		t.Errorf("server view %+v (%s), want %d received", s, rep.ServerError, rep.Sent)
	}
	cfg = parse(t, "-url", url, "-admin", p.AdminURL(), "-insecure", "-subscribers", "50", "-push", "-duration", "300ms")
	var notes strings.Builder
	rep, err = broadcast.Run(context.Background(), cfg, &notes)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Connected != 50 || rep.Pushes < 3 || rep.Received != 50*rep.Pushes || rep.Lost != 0 || len(rep.Errors) != 0 {
		t.Errorf("push: connected %d, pushes %d, received %d, lost %d, errors %v", rep.Connected, rep.Pushes, rep.Received, rep.Lost, rep.Errors)
	}
	if !strings.Contains(notes.String(), "warning: -insecure") {
		t.Errorf("no -insecure warning in %q", notes.String())
	}
	// Not trusted: no run, one line that says what to do.
	_, err = broadcast.Run(context.Background(), parse(t, "-url", url, "-admin", "", "-subscribers", "5", "-duration", "100ms"), io.Discard)
	if err == nil || !strings.HasSuffix(err.Error(), "x509: certificate signed by unknown authority: pass -ca FILE or -insecure") {
		t.Errorf("untrusted: %v", err)
	}
}

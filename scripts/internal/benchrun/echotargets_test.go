package benchrun

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/scripts/harness"
)

// TestStartEchoTarget starts the floor and Node's server as the echo
// benchmarks do, from the repository root, and checks the URLs loadgen is
// given.
func TestStartEchoTarget(t *testing.T) {
	t.Chdir("../../..")
	defer harness.RemoveBuilds()
	ctx := context.Background()
	p, url, admin, err := StartEchoTarget(ctx, io.Discard, "echo-tcp", "-pprof")
	if err != nil {
		t.Fatal(err)
	}
	if url != "tcp://"+p.Addr || admin != p.AdminURL() || !strings.Contains(p.Name, "echo-tcp -pprof") {
		t.Errorf("url %q, admin %q, name %q", url, admin, p.Name)
	}
	if _, err := p.ReadStats(); err != nil {
		t.Error(err)
	}
	if err := p.Stop(); err != nil {
		t.Error(err)
	}
	p, url, admin, err = StartEchoTarget(ctx, io.Discard, GnetFloor, "-pprof")
	if err != nil {
		t.Fatal(err)
	}
	if url != "ws://"+p.Addr+"/" || admin != "" {
		t.Errorf("%s: url %q, admin %q", GnetFloor, url, admin)
	}
	if err := p.Stop(); err != nil {
		t.Error(err)
	}
	if _, _, _, err := StartEchoTargetUnder(ctx, io.Discard, []string{"env"}, Node); err == nil {
		t.Error("a wrapper for Node: no error")
	}
	if _, err := os.Stat("scripts/node_modules/ws/package.json"); err != nil {
		t.Skip("ws (make deps) is missing")
	}
	p, url, admin, err = StartEchoTarget(ctx, io.Discard, Node)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if url != "ws://"+p.Addr+"/" || admin != "" {
		t.Errorf("node: url %q, admin %q", url, admin)
	}
}

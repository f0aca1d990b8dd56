package clustertest

import (
	"net"
	"strconv"
	"testing"

	"github.com/knowngood/knowngood/shared/procfs"
)

// TestFreePort: the port is free to listen on and, where the ephemeral
// range leaves room below it, outside that range.
func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if lo, _, err := procfs.LocalPortRange(); err == nil && lo > 20000 && (port < 20000 || port >= lo) {
		t.Errorf("port %d, want one from 20000 to %d, below the ephemeral range", port, lo-1)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d: %v", port, err)
	}
	ln.Close()
}

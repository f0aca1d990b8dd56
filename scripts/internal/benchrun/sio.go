package benchrun

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/knowngood/knowngood/scripts/harness"
)

// SioFloor names the bare zishang520 Socket.IO server
// (scripts/bench/floors/sioserver) in the tables: the floor of the
// Socket.IO targets.
const SioFloor = "bare zishang520"

// StartSioFloor builds and starts the bare zishang520 server on a free
// loopback port; extra is its arguments after the port and host ("pprof"
// serves /debug/pprof/, see SioFloorProfile). The caller stops it.
func StartSioFloor(ctx context.Context, stderr io.Writer, extra ...string) (*harness.Process, error) {
	bin, err := harness.Build("./scripts/bench/floors/sioserver", "sio-bare")
	if err != nil {
		return nil, err
	}
	p, err := harness.StartProcess(ctx, SioFloor, append([]string{bin, "0", "127.0.0.1"}, extra...))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "%s listening on %s\n", SioFloor, p.Addr)
	return p, nil
}

// SioFloorProfile is the CPU profile URL of a floor started with "pprof".
func SioFloorProfile(p *harness.Process) string { return "http://" + p.Addr + "/debug/pprof/profile" }

// Fetch writes the body of a GET of url (a pprof profile) to path.
func Fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

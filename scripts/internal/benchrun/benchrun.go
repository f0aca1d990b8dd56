// Package benchrun is what the benchmark programs under scripts/bench
// share: the binaries and servers they run (through scripts/harness), flag
// lists, and small figures.
package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/scripts/harness"
)

// Binaries are knowngood and loadgen, built by the harness.
type Binaries struct {
	Server, Loadgen string
}

// Build compiles ./servers/knowngood and ./loadgen (once per process); Remove
// deletes them. It must run from the repository root, where the Node
// servers and client scripts are found.
func Build(stderr io.Writer) (*Binaries, error) {
	if _, err := os.Stat("go.mod"); err != nil {
		return nil, errors.New("run it from the repository root (no go.mod here)")
	}
	fmt.Fprintln(stderr, "building ./servers/knowngood and ./loadgen")
	server, err := harness.Knowngood()
	if err != nil {
		return nil, err
	}
	loadgen, err := harness.Loadgen()
	if err != nil {
		harness.RemoveBuilds()
		return nil, err
	}
	return &Binaries{Server: server, Loadgen: loadgen}, nil
}

// Remove deletes the binaries.
func (b *Binaries) Remove() { harness.RemoveBuilds() }

// Start runs knowngood with args (through wrapper's words, if any) on free
// loopback ports, waits until it is healthy, and says so on stderr, with
// the URL of its live dashboard to watch the run in a browser. The caller
// stops it.
func Start(ctx context.Context, stderr io.Writer, wrapper []string, args ...string) (*harness.Process, error) {
	p, err := harness.StartKnowngood(ctx, wrapper, args...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "%s listening on %s; dashboard %s/\n", p.Name, p.Addr, p.AdminURL())
	return p, nil
}

// StartNode runs a Node reference server from scripts/node on a free port
// (it prints the same "listening" line as knowngood).
func StartNode(ctx context.Context, stderr io.Writer, script, name string) (*harness.Process, error) {
	p, err := harness.StartProcess(ctx, name, []string{"node", "scripts/node/" + script, "0"})
	if err != nil {
		return nil, fmt.Errorf("%w (npm install in scripts/ first?)", err)
	}
	fmt.Fprintf(stderr, "%s listening on %s\n", name, p.Addr)
	return p, nil
}

// Median of the values; 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// LastLine is the last non-empty line of s, for one-line errors.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/variants"
)

// Node names the Node `ws` echo server (scripts/node/ws-echo-server.mjs) in
// -variants and in the tables.
const Node = "node"

// FloorOf names, in -variants and in the tables, the minimal WebSocket echo
// server on library lib alone (scripts/bench/floors/LIBecho), the floor of
// lib's targets: "gnet-floor".
func FloorOf(lib variants.Library) string { return string(lib) + "-floor" }

// Floors are the floors of the registry's libraries that have one.
var Floors = func() []string {
	var out []string
	for _, w := range variants.WebSocketLibraries() {
		if w.Floor {
			out = append(out, FloorOf(w.Library))
		}
	}
	return out
}()

// GnetFloor is the gnet targets' floor.
var GnetFloor = FloorOf(variants.Gnet)

// FloorLibrary is the library whose floor target is.
func FloorLibrary(target string) (variants.Library, bool) {
	for _, w := range variants.WebSocketLibraries() {
		if w.Floor && FloorOf(w.Library) == target {
			return w.Library, true
		}
	}
	return "", false
}

// EchoFloor is the raw TCP echo of the catalog, the floor the WebSocket
// echoes are measured against.
var EchoFloor = variants.NamesOf(variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.TCP)))[0]

// WSEchoVariants are the WebSocket echoes of the catalog.
var WSEchoVariants = variants.NamesOf(variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket)))

// EchoVariants are the knowngood echo targets, the floor first.
var EchoVariants = append([]string{EchoFloor}, WSEchoVariants...)

// EchoTargetsFlag defines -variants, the echo targets to measure (all of
// them and Node by default); its value is checked by ParseEchoTargets.
func EchoTargetsFlag(fs interface {
	String(name, value, usage string) *string
}) *string {
	return fs.String("variants", strings.Join(slices.Concat(EchoVariants, Floors, []string{Node}), ","),
		"comma-separated `list` of targets: "+strings.Join(EchoVariants, ", ")+", "+strings.Join(Floors, ", ")+" (minimal echoes on each library alone), "+Node+" (Node ws)")
}

// ParseEchoTargets checks a -variants list, keeping its order.
func ParseEchoTargets(list string) ([]string, error) {
	return Pick("variants", list, slices.Concat(EchoVariants, Floors, []string{Node}))
}

// Foreign reports whether target is not knowngood (Node ws, a library's
// floor): it has no admin listener, no /stats and no flags of knowngood's.
func Foreign(target string) bool {
	_, floor := FloorLibrary(target)
	return target == Node || floor
}

// StartEchoTarget starts a fresh echo server, knowngood's variant (with
// extra flags), a library's floor (extra flags ignored) or Node's, and returns the URL that loadgen uses and its
// admin address ("" for Node, which has none).
func StartEchoTarget(ctx context.Context, stderr io.Writer, variant string, extra ...string) (p *harness.Process, url, admin string, err error) {
	return StartEchoTargetUnder(ctx, stderr, nil, variant, extra...)
}

// StartEchoTargetUnder is StartEchoTarget with knowngood run by a wrapper
// command (valgrind, say): wrapper's words, then the server and its flags.
// The wrapper must run the server in its own process, so that PID is the
// server's, and pass its output through.
func StartEchoTargetUnder(ctx context.Context, stderr io.Writer, wrapper []string, variant string, extra ...string) (p *harness.Process, url, admin string, err error) {
	if variant == Node {
		if len(wrapper) > 0 {
			return nil, "", "", errors.New("no wrapper for the Node server")
		}
		p, err := StartNode(ctx, stderr, "ws-echo-server.mjs", "node ws")
		if err != nil {
			return nil, "", "", err
		}
		return p, "ws://" + p.Addr + "/", "", nil
	}
	if lib, ok := FloorLibrary(variant); ok {
		bin, err := harness.Floor(string(lib))
		if err != nil {
			return nil, "", "", err
		}
		p, err := harness.StartProcess(ctx, variant, append(append(slices.Clone(wrapper), bin), "-addr", "127.0.0.1:0"))
		if err != nil {
			return nil, "", "", err
		}
		fmt.Fprintf(stderr, "%s listening on %s\n", variant, p.Addr)
		return p, "ws://" + p.Addr + "/", "", nil
	}
	p, err = Start(ctx, stderr, wrapper, append([]string{"-variant", variant}, extra...)...)
	if err != nil {
		return nil, "", "", err
	}
	url = "ws://" + p.Addr + "/"
	if v, _ := variants.Lookup(variant); v.Protocol == variants.TCP {
		url = "tcp://" + p.Addr
	}
	return p, url, p.AdminURL(), nil
}

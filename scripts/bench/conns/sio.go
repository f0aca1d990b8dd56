package main

import (
	"context"
	"io"
	"slices"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

// The Socket.IO rows: the baseline variant on each engine, beside the
// bare zishang520 server and Node's socket.io. loadgen conns completes
// each socket's namespace CONNECT and answers its pings, so what is held
// is a Socket.IO socket over WebSocket, not a bare Engine.IO session.
const (
	sioZishang520 = "sio-zishang520"
	sioNative     = "sio-native"
	sioNativeGnet = "sio-native-gnet"
	sioBare       = "sio-bare"
	sioNode       = "sio-node"
)

var sioTargets = []string{sioZishang520, sioNative, sioNativeGnet, sioBare, sioNode}

// sioFlags are each engine row's knowngood flags.
var sioFlags = map[string][]string{
	sioZishang520: {"-engine", "zishang520"},
	sioNative:     {"-engine", "native"},
	sioNativeGnet: {"-engine", "native-gnet"},
}

// sioGoal is the most a held Socket.IO socket may cost on the native
// engine's gnet transport, KiB of server RSS: the other rows are there to
// compare with.
const sioGoal = 4

// sioPath is the Engine.IO WebSocket URL's path and query.
const sioPath = "/socket.io/?EIO=4&transport=websocket"

func isSio(target string) bool { return slices.Contains(sioTargets, target) }

// startSio starts one Socket.IO row's server: its process, the URL for
// loadgen conns, and the admin URL (knowngood's only).
func startSio(ctx context.Context, stderr io.Writer, target string) (p *harness.Process, url, admin string, err error) {
	switch target {
	case sioBare:
		p, err = benchrun.StartSioFloor(ctx, stderr)
	case sioNode:
		p, err = benchrun.StartNode(ctx, stderr, "sio-server.mjs", "node socket.io")
	default:
		args := append([]string{"-variant", benchrun.SioBaseline, "-pprof"}, sioFlags[target]...)
		if p, err = benchrun.Start(ctx, stderr, nil, args...); err == nil {
			admin = p.AdminURL()
		}
	}
	if err != nil {
		return nil, "", "", err
	}
	return p, "ws://" + p.Addr + sioPath, admin, nil
}

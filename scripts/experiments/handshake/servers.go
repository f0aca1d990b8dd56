package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/protocol"
)

// The kinds of server a run can be against: a knowngood target, or one of
// the real servers the targets stand in for.
const (
	knowngood = "knowngood"
	python    = "python" // python-socketio's AsyncServer on uvicorn (scripts/python/sio_server.py)
	node      = "node"   // Node's socket.io (scripts/node/sio-server.mjs)
)

// The founding report's three connect handlers, as the real servers run
// them (--connect).
const (
	handlerEmpty    = "empty"    // nothing
	handlerAsync    = "async"    // asyncio.sleep / setTimeout
	handlerBlocking = "blocking" // time.sleep / a busy-wait: the loop stops
)

// server is one column of the comparison: what it is, and how it spends
// a connect.
type server struct {
	name    string // as -servers names it: "empty", "blocking-node", "python-blocking"
	kind    string // knowngood, python or node
	handler string // the report's handler it runs or stands in for
	variant string // knowngood's variant
	model   string // knowngood's -blocking-model; the real server's own discipline
}

// allServers: knowngood's Socket.IO variants (blocking once per model),
// then the real servers with each handler, from the catalog.
var allServers = func() []server {
	var out []server
	handlers := map[variants.Connect]string{variants.AtOnce: handlerEmpty, variants.OwnTimer: handlerAsync, variants.SharedLoop: handlerBlocking}
	for _, v := range variants.ByFamily(variants.SocketIO) {
		h := handlers[v.Connect]
		if v.Connect != variants.SharedLoop {
			out = append(out, server{name: v.Name, kind: knowngood, handler: h, variant: v.Name})
			continue
		}
		for _, m := range []string{protocol.BlockingAsyncio, protocol.BlockingNode} {
			out = append(out, server{name: v.Name + "-" + m, kind: knowngood, handler: h, variant: v.Name, model: m})
		}
	}
	for _, kind := range []string{python, node} {
		model := map[string]string{python: protocol.BlockingAsyncio, node: protocol.BlockingNode}[kind]
		for _, h := range []string{handlerEmpty, handlerAsync, handlerBlocking} {
			out = append(out, server{name: kind + "-" + h, kind: kind, handler: h, model: model})
		}
	}
	return out
}()

func serverNames(servers []server) []string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.name
	}
	return names
}

func serverNamed(name string) server {
	for _, s := range allServers {
		if s.name == name {
			return s
		}
	}
	panic("no server " + name)
}

// peers are the real servers a knowngood target stands in for: those with
// its handler and, for blocking, the write discipline of its model.
func (s server) peers() []server {
	if s.kind != knowngood {
		return nil
	}
	var out []server
	for _, p := range allServers {
		if p.kind != knowngood && p.handler == s.handler && (s.handler != handlerBlocking || p.model == s.model) {
			out = append(out, p)
		}
	}
	return out
}

// start runs the server on a free loopback port with the experiment's
// delay and engine; admin is knowngood's admin URL ("" for the others).
func (s server) start(ctx context.Context, stderr io.Writer, o options) (p *harness.Process, admin string, err error) {
	delayMs := strconv.FormatInt(o.delay.Milliseconds(), 10)
	switch s.kind {
	case knowngood:
		args := []string{"-variant", s.variant, "-delay", o.delay.String(), "-engine", o.engine}
		if s.model != "" {
			args = append(args, "-blocking-model", s.model)
		}
		p, err = benchrun.Start(ctx, stderr, nil, args...)
		if err != nil {
			return nil, "", err
		}
		return p, p.AdminURL(), nil
	case python:
		p, err = harness.StartProcess(ctx, s.name, []string{"/usr/bin/python3", "scripts/python/sio_server.py", "--connect", s.handler, "--delay-ms", delayMs})
		if err != nil {
			err = fmt.Errorf("%w (make deps installs python3-socketio and python3-uvicorn)", err)
		}
	case node:
		p, err = harness.StartProcess(ctx, s.name, []string{"node", "scripts/node/sio-server.mjs", "0", "127.0.0.1", "--connect", s.handler, "--delay-ms", delayMs})
		if err != nil {
			err = fmt.Errorf("%w (make deps runs npm ci in scripts/)", err)
		}
	}
	if err != nil {
		return nil, "", err
	}
	fmt.Fprintf(stderr, "%s listening on %s\n", s.name, p.Addr)
	return p, "", nil
}

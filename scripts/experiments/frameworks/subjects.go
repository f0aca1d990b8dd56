package main

import (
	"context"
	"io"
	"sync"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/scripts/internal/frameworks"
)

// subject is one server the experiment measures: a framework of the
// report, or one of knowngood's targets beside them.
type subject struct {
	key  string // its -frameworks name
	row  string // its row in the tables
	runs string // what runs here
	sio  bool   // speaks Socket.IO: the "message" event echoed
	// beside: for knowngood's targets, the report's row they stand
	// beside (the same library, or the same protocol); "" for the
	// report's own.
	beside string
	// available is nil when the server can run here, else the reason
	// (what to install); asked once.
	available func() error
	// start runs a fresh server and returns it, the URL its clients use
	// (ws://HOST:PORT/, or http://HOST:PORT for Socket.IO) and its admin
	// URL ("" for none).
	start func(ctx context.Context, stderr io.Writer) (p *harness.Process, url, admin string, err error)
}

// sioTarget is knowngood's Socket.IO target set beside Node's socket.io:
// the variant with nothing in its connect handler.
const sioTarget = "empty"

// besideReport says which row of the report each of knowngood's targets
// stands beside: its library's minimal server, or Node's socket.io.
var besideReport = map[string]string{"echo-gorilla": "gorilla", "echo-coder": "coder", sioTarget: "node-socketio"}

func allSubjects() []subject {
	var out []subject
	for _, f := range frameworks.Servers() {
		out = append(out, subject{key: f.Key, row: f.Row, runs: f.Runs, sio: f.SocketIO, available: sync.OnceValue(f.Available),
			start: func(ctx context.Context, stderr io.Writer) (*harness.Process, string, string, error) {
				p, url, err := f.Start(ctx, stderr)
				return p, url, "", err
			}})
	}
	for _, v := range benchrun.WSEchoVariants {
		out = append(out, subject{key: v, row: "knowngood " + v, runs: "knowngood -variant " + v, beside: besideReport[v],
			available: func() error { return nil },
			start: func(ctx context.Context, stderr io.Writer) (*harness.Process, string, string, error) {
				return benchrun.StartEchoTarget(ctx, stderr, v)
			}})
	}
	out = append(out, subject{key: sioTarget, row: "knowngood " + sioTarget, runs: "knowngood -variant " + sioTarget, sio: true,
		beside: besideReport[sioTarget], available: func() error { return nil },
		start: func(ctx context.Context, stderr io.Writer) (*harness.Process, string, string, error) {
			p, err := benchrun.Start(ctx, stderr, nil, "-variant", sioTarget)
			if err != nil {
				return nil, "", "", err
			}
			return p, "http://" + p.Addr, p.AdminURL(), nil
		}})
	return out
}

func keysOf(s []subject) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.key
	}
	return out
}

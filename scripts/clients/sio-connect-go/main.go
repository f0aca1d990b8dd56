// Command sio-connect-go opens N Socket.IO connections at once with the
// zishang520 Go client (github.com/zishang520/socket.io/clients/socket/v3)
// used as its README shows: socket.Connect with the library's default
// transports (none set) and its own connect timeout (the "timeout"
// option), and reports how many completed the namespace CONNECT, as one
// JSON line on stdout, the shape of sio-connect.mjs and sio_connect.py:
//
//	go run ./scripts/clients/sio-connect-go --url http://127.0.0.1:8080 --n 100 [--deadline-ms 15000] [--transports websocket]
//
//	{"client":"zishang520/socket.io-client-go","version":"v3.0.6","attempts":N,"connected":n,"failed":n,
//	 "errors":{"message":count},"first_transport":{"polling":{"attempts":n,"connected":n},...},
//	 "p50_ms":..,"p95_ms":..,"p99_ms":..,"max_ms":..,"total_ms":..,"sent":0,"received":0}
//
// Every connection has its own Manager (forceNew) and no reconnection, as
// in the other clients, so that one attempt is one connection. The
// client's timeout covers only the Engine.IO open: a connection that has
// neither connected nor failed when --deadline-ms (plus a second for the
// client's own timeout to fire first) has passed counts as "no outcome by
// the deadline". first_transport counts, by the transport each connection
// tried first (the first of the client's set, in its map order), the
// attempts and those that connected. --transports, for a comparison,
// sets them as sio-connect.mjs does; by default they are left unset.
// Exit status: 0 when it ran (the counts tell the result), 2 on bad
// arguments.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

const (
	clientName = "zishang520/socket.io-client-go"
	module     = "github.com/zishang520/socket.io/clients/socket/v3"
	// noOutcome: neither "connect" nor "connect_error" by the deadline.
	noOutcome = "no outcome by the deadline"
	// grace lets the client's own timeout, equal to the deadline, fire
	// before the deadline counts a connection as without outcome.
	grace = time.Second
)

type options struct {
	url        string
	n          int
	deadline   time.Duration
	transports []string // nil: the library's default
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sio-connect-go: %v\n", err)
		os.Exit(2)
	}
	if err := json.NewEncoder(os.Stdout).Encode(connectAll(o)); err != nil {
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("sio-connect-go", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rawURL := fs.String("url", "", "the target, http://HOST:PORT")
	n := fs.Int("n", 1, "connections to open at once, 1 to 100000")
	deadlineMs := fs.Int("deadline-ms", 15000, "the client's connect timeout, ms (its \"timeout\" option)")
	transports := fs.String("transports", "", "websocket, polling or polling,websocket; empty: the library's default set, unset")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	u, err := url.Parse(*rawURL)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return options{}, fmt.Errorf("bad --url %q: want http://HOST:PORT", *rawURL)
	case *n < 1 || *n > 100000:
		return options{}, fmt.Errorf("bad --n %d: want an integer from 1 to 100000", *n)
	case *deadlineMs < 1:
		return options{}, fmt.Errorf("bad --deadline-ms %d: want a positive integer", *deadlineMs)
	case fs.NArg() > 0:
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o := options{url: *rawURL, n: *n, deadline: time.Duration(*deadlineMs) * time.Millisecond}
	if *transports != "" {
		o.transports = strings.Split(*transports, ",")
		for _, t := range o.transports {
			if t != "websocket" && t != "polling" {
				return options{}, fmt.Errorf("bad --transports %q: want websocket, polling or polling,websocket", *transports)
			}
		}
	}
	return o, nil
}

// byTransport counts the connections that tried one transport first.
type byTransport struct {
	Attempts  int `json:"attempts"`
	Connected int `json:"connected"`
}

// result is the JSON line.
type result struct {
	Client         string                  `json:"client"`
	Version        string                  `json:"version"`
	Attempts       int                     `json:"attempts"`
	Connected      int                     `json:"connected"`
	Failed         int                     `json:"failed"`
	Errors         map[string]int          `json:"errors"`
	FirstTransport map[string]*byTransport `json:"first_transport"`
	P50ms          *float64                `json:"p50_ms"`
	P95ms          *float64                `json:"p95_ms"`
	P99ms          *float64                `json:"p99_ms"`
	MaxMs          *float64                `json:"max_ms"`
	TotalMs        float64                 `json:"total_ms"`
	Sent           int                     `json:"sent"`
	Received       int                     `json:"received"`
}

// tally gathers the outcomes, from the client's goroutines.
type tally struct {
	mu        sync.Mutex
	res       *result
	latencies []float64
	pending   int
	done      chan struct{} // closed when every connection has an outcome
}

// settle records one connection's outcome, the first it has.
func (t *tally) settle(first string, took time.Duration, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	bt := t.res.FirstTransport[first]
	if bt == nil {
		bt = &byTransport{}
		t.res.FirstTransport[first] = bt
	}
	bt.Attempts++
	if err == nil {
		bt.Connected++
		t.res.Connected++
		t.latencies = append(t.latencies, float64(took.Microseconds())/1000)
	} else {
		t.res.Errors[err.Error()]++
	}
	if t.pending--; t.pending == 0 {
		close(t.done)
	}
}

// connectAll starts every connection at once and returns once each has an
// outcome or the deadline (plus grace) has passed.
func connectAll(o options) *result {
	res := &result{Client: clientName, Version: version(), Attempts: o.n, Errors: map[string]int{}, FirstTransport: map[string]*byTransport{}}
	t := &tally{res: res, pending: o.n, done: make(chan struct{})}
	start := time.Now()
	// Each on its own goroutine: the client dials inside Connect, and a
	// WebTransport dial blocks there until QUIC gives up.
	socks := make([]*socket.Socket, o.n)
	settled := make([]sync.Once, o.n)
	var dialled sync.WaitGroup
	for i := range o.n {
		dialled.Go(func() { socks[i] = dial(o, t, &settled[i], time.Now()) })
	}
	select {
	case <-t.done:
	case <-time.After(o.deadline + grace):
	}
	res.TotalMs = float64(time.Since(start).Microseconds()) / 1000
	dialled.Wait()
	for i, s := range socks {
		settled[i].Do(func() { t.settle(firstTransport(s), 0, errors.New(noOutcome)) })
		if s != nil {
			s.Disconnect()
		}
	}
	res.Failed = res.Attempts - res.Connected
	summarize(res, t.latencies)
	return res
}

// dial starts one connection as the library's README does, with its
// listeners attached at once.
func dial(o options, t *tally, once *sync.Once, t0 time.Time) *socket.Socket {
	opts := socket.DefaultOptions()
	opts.SetTimeout(o.deadline)
	opts.SetForceNew(true)
	opts.SetReconnection(false)
	if o.transports != nil {
		opts.SetTransports(transportSet(o.transports))
	}
	sock, err := socket.Connect(o.url, opts)
	if err != nil {
		once.Do(func() { t.settle("none", 0, err) })
		return nil
	}
	sock.Once("connect", func(...any) {
		once.Do(func() { t.settle(firstTransport(sock), time.Since(t0), nil) })
	})
	sock.Once("connect_error", func(args ...any) {
		msg := "connect_error"
		if len(args) > 0 && args[0] != nil {
			msg = fmt.Sprint(args[0])
		}
		once.Do(func() { t.settle(firstTransport(sock), 0, errors.New(msg)) })
	})
	return sock
}

// firstTransport is the transport the connection tried first: the first
// of its Engine.IO socket's transport list, which the client builds from
// its set of transports in map order.
func firstTransport(s *socket.Socket) string {
	if s == nil || s.Io() == nil || s.Io().Engine() == nil {
		return "none"
	}
	name, err := s.Io().Engine().Transports().Get(0)
	if err != nil {
		return "none"
	}
	return name
}

func transportSet(names []string) *types.Set[engine.TransportCtor] {
	var ctors []engine.TransportCtor
	for _, n := range names {
		if n == "websocket" {
			ctors = append(ctors, &engine.WebSocketBuilder{})
		} else {
			ctors = append(ctors, &engine.PollingBuilder{})
		}
	}
	return types.NewSet(ctors...)
}

// summarize fills in the nearest-rank percentiles of the connected ones.
func summarize(res *result, latencies []float64) {
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	rank := func(p float64) *float64 {
		i := max(0, int(float64(len(latencies))*p/100+0.999999)-1)
		v := latencies[min(i, len(latencies)-1)]
		return &v
	}
	res.P50ms, res.P95ms, res.P99ms, res.MaxMs = rank(50), rank(95), rank(99), rank(100)
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == module {
				return d.Version
			}
		}
	}
	return "unknown"
}

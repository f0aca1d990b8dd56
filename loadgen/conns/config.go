// Package conns is the idle-connections scenario of loadgen: it opens N
// WebSocket (or raw TCP) connections in batches, each bound to the next
// source address of a range so that no one address runs out of ephemeral
// ports, or N Socket.IO sockets on a URL on /socket.io/ (the Engine.IO
// open and the namespace CONNECT, with the zishang520 client), holds them
// without traffic, and reports how many it held, how long
// they took to establish, the failures with their first error, and what
// each one costs the target in resident memory (its RSS after minus before,
// divided by the connections held).
//
// Every connection takes a file descriptor on both sides: before it starts,
// Run reads the open-files limit, raises the soft limit to the hard one
// when it can, says how many connections that allows, and refuses an -n
// beyond it.
package conns

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/target"
)

// Defaults and bounds.
const (
	DefaultURL     = "ws://127.0.0.1:8080/"
	DefaultN       = 1000
	DefaultBatch   = 1000
	DefaultHold    = 10 * time.Second
	DefaultTimeout = 10 * time.Second
	// DefaultNamespace is the namespace of a Socket.IO URL's sockets.
	DefaultNamespace = "/"

	maxN = 10000000
	// maxEcho bounds -echo: one message, not a transfer.
	maxEcho = 1 << 20
)

// Config is one run of the scenario.
type Config struct {
	// -url (ws[s]://HOST:PORT/PATH, tcp://HOST:PORT or tls://HOST:PORT),
	// -ca, -insecure, -admin, -json, -csv,
	// -html
	scenario.Common
	N       int           // connections
	Batch   int           // connections dialled at once
	Sources []netip.Addr  // source addresses, used in turn; none = the kernel's choice
	Hold    time.Duration // how long the connections are held once all are open
	Timeout time.Duration // bounds each connection's dial and upgrade
	PID     int           // the target's process id, for its RSS from /proc; 0 for none
	// Namespace is the namespace a Socket.IO URL's sockets join.
	Namespace string
	// Loop holds ws://, tcp:// and Socket.IO-over-WebSocket connections
	// on event loops instead of a reader goroutine each (onLoops).
	Loop bool
	// FreeOSMemory: after the hold, also read the RSS once the target has
	// returned its free memory to the OS (POST /debug/freeosmemory).
	FreeOSMemory bool
	// Echo: each WebSocket or TCP connection sends one message of Echo
	// bytes once open and waits for it back before it counts as
	// established; 0 for none.
	Echo int
	// Get: each connection is one HTTP GET of the -url (http://) on a new
	// TCP connection, closed once answered; one answered with Status
	// counts as established.
	Get    bool
	Status int
}

// ParseFlags parses the scenario's flags. A bad value gives a one-line error
// that names the flag and the accepted form; -h gives flag.ErrHelp.
func ParseFlags(args []string) (Config, error) { return flags.Parse(args) }

// Usage prints the flags and their defaults.
func Usage(w io.Writer) { flags.Usage(w) }

// ownFlags defines the scenario's own flags on fs.
func ownFlags(fs *flag.FlagSet, cfg *Config) {
	flagset.Int(fs, &cfg.N, "n", DefaultN, 1, maxN, "`N` connections to open and hold (the open-files limit applies)")
	flagset.Int(fs, &cfg.Batch, "batch", DefaultBatch, 1, maxN, "`N` connections dialled at once; the next batch starts when this one is done")
	target.SourcesVar(fs, &cfg.Sources, "; each gives its own ephemeral ports to one target")
	flagset.Duration(fs, &cfg.Hold, "hold", DefaultHold, true, "how long to hold the connections once all are open, before the target's RSS is read")
	flagset.Duration(fs, &cfg.Timeout, "timeout", DefaultTimeout, false, "bounds each connection's dial and upgrade")
	flagset.PID(fs, &cfg.PID, "pid", "the target's process `ID`, on this machine: its RSS comes from /proc/PID/status (for a target without /stats)")
	fs.StringVar(&cfg.Namespace, "namespace", DefaultNamespace, "the `NAMESPACE` each socket joins, for a Socket.IO URL (ws://HOST:PORT/socket.io/)")
	fs.BoolVar(&cfg.Loop, "loop", true, "hold the connections on event loops (gnet, gobwas/ws), not a reader goroutine each, so that the client costs less than the target it measures: ws:// and tcp:// ones, and Socket.IO over WebSocket with loadgen's lean client; TLS connections and Socket.IO over polling stay on goroutines (Socket.IO with the zishang520 client)")
	flagset.Int(fs, &cfg.Echo, "echo", 0, 0, maxEcho, "`BYTES`: once open, each WebSocket or TCP connection sends one message of this size and waits for its echo before it counts as established, the echo inside its connect time and -timeout (the request of a connect-and-request burst); 0: none")
	fs.BoolVar(&cfg.Get, "get", false, "instead of WebSocket connections, one HTTP/1.1 GET of the -url (http://HOST:PORT/PATH) per new TCP connection, with Connection: close (no keep-alive): a response with the -status counts as established, its time from the dial to the whole response read; nothing is held. A knowngood WebSocket target answers a plain GET on its main listener 426 Upgrade Required, so use -status 426 there")
	flagset.Int(fs, &cfg.Status, "status", http.StatusOK, 100, 599, "with -get, the HTTP `STATUS` that counts a response as a success (any other is a failure, by its status)")
	fs.BoolVar(&cfg.FreeOSMemory, "free-os-memory", false, "after the hold, also ask the target to collect its garbage and return free memory to the OS (POST /debug/freeosmemory on -admin; start a knowngood target with -pprof), and read its RSS again: what the connections hold live, without the garbage collector's slack")
}

// flags are the scenario's: the common ones, then its own (ownFlags).
var flags = scenario.Flags[Config, *Config]{Name: "conns", Own: ownFlags, Normalize: (*Config).normalize, Words: scenario.Words{
	Metrics: metrics, DefaultURL: DefaultURL,
	URL:   "`URL` of the target: ws://HOST:PORT/PATH (WebSocket), http://HOST:PORT/PATH (with -get), ws://HOST:PORT/socket.io/ (Socket.IO sockets, namespace CONNECT done; ?transport=polling for polling), tcp://HOST:PORT (raw TCP), or wss://, tls:// for the same in TLS (see -ca, -insecure)",
	Admin: "`URL` of the target's admin listener, http://HOST:PORT, for /stats before and after" + scenario.AdminMore,
}}

// normalize checks the URL and fills in the admin address.
func (c *Config) normalize(set map[string]bool) error {
	u, err := c.parseURL(set)
	if err != nil {
		return err
	}
	c.URL = u.String
	if !c.Get {
		if err := c.checkSocketIO(u, set); err != nil {
			return err
		}
		if c.Echo > 0 && u.SocketIO() {
			return fmt.Errorf("flag -echo: not for a Socket.IO URL (%s), whose sockets echo events, not bare messages: use loadgen handshake -echo", c.URL)
		}
	}
	if c.Shard.Set() {
		if c.N, _ = c.Shard.Split(c.N); c.N == 0 {
			return fmt.Errorf("-shard %s leaves this shard no connections: give -n of at least %d", c.Shard, c.Shard.N)
		}
	}
	c.Batch = min(c.Batch, c.N)
	err = c.ResolveAdmin(set, u.Host)
	if err == nil && c.FreeOSMemory && c.Admin == "" {
		err = errors.New("flag -free-os-memory: needs the target's admin listener (-admin)")
	}
	return err
}

// parseURL reads -url: an http:// one with -get, the scenario's others
// without it.
func (c *Config) parseURL(set map[string]bool) (target.URL, error) {
	switch {
	case set["status"] && !c.Get:
		return target.URL{}, errors.New("flag -status: only with -get")
	case !c.Get && strings.HasPrefix(c.URL, "http://"):
		return target.URL{}, fmt.Errorf("invalid value %q for flag -url: an http:// URL is for -get (one GET per connection); for WebSocket connections give ws://", c.URL)
	case !c.Get:
		return target.ParseURL(c.URL)
	case c.Echo > 0:
		return target.URL{}, errors.New("flag -echo: not with -get, whose request is the GET")
	case set["namespace"]:
		return target.URL{}, errors.New("flag -namespace: not with -get")
	}
	if !set["hold"] {
		c.Hold = 0 // a GET's connection is closed once answered: nothing to hold
	}
	return httpURL(c.URL)
}

// httpURL reads a -get URL, http://HOST:PORT/PATH.
func httpURL(raw string) (target.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || u.User != nil || u.Fragment != "" {
		return target.URL{}, fmt.Errorf("invalid value %q for flag -url: -get wants http://HOST:PORT/PATH", raw)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return target.URL{String: u.String(), Addr: u.Host, Host: u.Hostname()}, nil
}

// checkSocketIO refuses what a Socket.IO URL cannot take: -sources (the
// Socket.IO client binds no source address), and a -namespace is only for
// a Socket.IO URL.
func (c *Config) checkSocketIO(u target.URL, set map[string]bool) error {
	t, sio, err := socketIOTarget(u)
	switch {
	case err != nil:
		return err
	case sio && len(c.Sources) > 0 && !onLoops(*c, u, t):
		return errors.New("flag -sources: this Socket.IO URL (/socket.io/ over polling, TLS, or with -loop=false) is dialled by the zishang520 client, which binds no source address: leave -sources out, or run a -shard per machine")
	case !sio && set["namespace"]:
		return fmt.Errorf("flag -namespace: only for a Socket.IO URL (ws://HOST:PORT%s), not %s", enginePath, c.URL)
	case c.Namespace == "" || !strings.HasPrefix(c.Namespace, "/"):
		return fmt.Errorf("flag -namespace: want a path starting with /, not %q", c.Namespace)
	}
	return nil
}

// Package handshake is the handshake scenario of loadgen: N Socket.IO
// connections at once, each timed from its start to its namespace CONNECT,
// then one acknowledged `echo` each, then a clean disconnect; the client's
// figures are printed next to the server's own (its /stats, before and after).
package handshake

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/sioclient"
)

// Defaults.
const (
	DefaultURL       = "http://127.0.0.1:8080"
	DefaultN         = 100
	DefaultDeadline  = 15 * time.Second
	DefaultTransport = sioclient.WebSocket
	maxN             = 1000000
)

// Config is one run of the scenario.
type Config struct {
	// -url (the target, http(s)://HOST:PORT), -ca, -insecure, -admin,
	// -json, -csv, -html
	scenario.Common
	N         int           // connections opened at once
	Deadline  time.Duration // bounds each connection's namespace CONNECT, and then the echo
	Transport string        // websocket, polling or polling,websocket
	Namespace string        // Socket.IO namespace
	Echo      bool          // emit `echo` once on every connected socket
}

// ParseFlags parses the scenario's flags. A bad value gives a one-line error
// that names the flag and the accepted form; -h gives flag.ErrHelp.
func ParseFlags(args []string) (Config, error) { return flags.Parse(args) }

// Usage prints the flags and their defaults.
func Usage(w io.Writer) { flags.Usage(w) }

// ownFlags defines the scenario's own flags on fs.
func ownFlags(fs *flag.FlagSet, cfg *Config) {
	flagset.Int(fs, &cfg.N, "n", DefaultN, 1, maxN, "`N` connections opened at once")
	flagset.Duration(fs, &cfg.Deadline, "deadline", DefaultDeadline, false, "`DURATION` allowed for each connection's namespace CONNECT, counted from the start, and again for the echo")
	cfg.Transport = DefaultTransport
	fs.Func("transport", fmt.Sprintf("`TRANSPORT`: %s (polling,websocket = polling first, then upgrade) (default %s)", strings.Join(sioclient.Transports, " | "), DefaultTransport), func(s string) error {
		for _, t := range sioclient.Transports {
			if s == t {
				cfg.Transport = s
				return nil
			}
		}
		return fmt.Errorf("want %s", strings.Join(sioclient.Transports, ", "))
	})
	fs.StringVar(&cfg.Namespace, "namespace", "/", "Socket.IO `NAMESPACE`")
	fs.BoolVar(&cfg.Echo, "echo", true, "after connecting, emit \"echo\" once on every socket and wait for its ack")
}

// flags are the scenario's: the common ones, then its own (ownFlags).
var flags = scenario.Flags[Config, *Config]{Name: "handshake", Own: ownFlags, Normalize: (*Config).normalize, Words: scenario.Words{
	Metrics: metrics, DefaultURL: DefaultURL,
	URL:   "`URL` of the target server, http://HOST:PORT, or https://HOST:PORT in TLS (polling over https, the WebSocket over wss; see -ca, -insecure)",
	Admin: "`URL` of the server's admin listener, http://HOST:PORT, for /stats before and after the run" + scenario.AdminMore,
}}

// normalize checks the values that the flag functions cannot check alone and
// fills in the admin address.
func (c *Config) normalize(set map[string]bool) error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("invalid value %q for flag -url: want http://HOST:PORT or https://HOST:PORT (the namespace is -namespace)", c.URL)
	}
	c.URL = u.Scheme + "://" + u.Host
	if !strings.HasPrefix(c.Namespace, "/") {
		return fmt.Errorf("invalid value %q for flag -namespace: want a path starting with /", c.Namespace)
	}
	if c.Shard.Set() {
		if c.N, _ = c.Shard.Split(c.N); c.N == 0 {
			return fmt.Errorf("-shard %s leaves this shard no connections: give -n of at least %d", c.Shard, c.Shard.N)
		}
	}
	return c.ResolveAdmin(set, u.Hostname())
}

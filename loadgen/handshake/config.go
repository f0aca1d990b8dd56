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

	"knowngood/loadgen/internal/flagset"
	"knowngood/loadgen/internal/statsclient"
	"knowngood/loadgen/sioclient"
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
	URL       string        // target, http(s)://HOST:PORT
	N         int           // connections opened at once
	Deadline  time.Duration // bounds each connection's namespace CONNECT, and then the echo
	Transport string        // websocket, polling or polling,websocket
	Namespace string        // Socket.IO namespace
	Echo      bool          // emit `echo` once on every connected socket
	JSON      string        // write the report as JSON to this file; "-" is stdout
	CSV       string        // write the per-second samples as CSV to this file
	HTML      string        // write the report as an HTML page to this file
	Admin     string        // base URL of the server's admin listener; "" for none
}

// ParseFlags parses the scenario's flags. A bad value gives a one-line error
// that names the flag and the accepted form; -h gives flag.ErrHelp.
func ParseFlags(args []string) (Config, error) {
	cfg := Config{}
	set, err := flagset.Parse(newFlagSet(&cfg), args)
	if err != nil {
		return Config{}, err
	}
	if err := cfg.normalize(set["admin"]); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Usage prints the flags and their defaults.
func Usage(w io.Writer) {
	flagset.Usage(w, newFlagSet(&Config{}))
}

func newFlagSet(cfg *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("handshake", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, and printed by the caller on one line
	fs.StringVar(&cfg.URL, "url", DefaultURL, "`URL` of the target server, http://HOST:PORT")
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
	fs.StringVar(&cfg.JSON, "json", "", "also write the report as one JSON object to `FILE` (- = stdout; the table then goes to stderr)")
	flagset.Files(fs, &cfg.CSV, &cfg.HTML)
	fs.StringVar(&cfg.Admin, "admin", "", "`URL` of the server's admin listener, http://HOST:PORT, for /stats before and after the run (default: the target's host, port "+statsclient.DefaultAdminPort+"; '' = none)")
	return fs
}

// normalize checks the values that the flag functions cannot check alone and
// fills in the admin address.
func (c *Config) normalize(adminSet bool) error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("invalid value %q for flag -url: want http://HOST:PORT (the namespace is -namespace)", c.URL)
	}
	c.URL = u.Scheme + "://" + u.Host
	if !strings.HasPrefix(c.Namespace, "/") {
		return fmt.Errorf("invalid value %q for flag -namespace: want a path starting with /", c.Namespace)
	}
	c.Admin, err = statsclient.AdminURL(c.Admin, adminSet, u.Hostname())
	return err
}

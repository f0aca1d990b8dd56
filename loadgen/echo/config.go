// Package echo is the echo scenario of loadgen: C connections send messages
// of a fixed size and read each one's echo back, in one of three modes,
// and the report gives the rate, the latency percentiles (HdrHistogram),
// the errors, and the CPU time of both sides over the same window.
//
//   - sync: each connection sends, waits for the echo, and sends again.
//   - pipelined: each connection keeps up to -inflight messages awaiting
//     their echo; over ws:// and tcp:// the connections are read and
//     written on -loops event loops (gnet), not on goroutines.
//   - rate: open loop at -rate messages per second in total, spread evenly
//     over the connections; each message's latency is counted from the
//     moment it was due to be sent, so a stall is charged to every message
//     it delayed, not only to the one in flight (no coordinated omission).
//
// ws:// URLs speak WebSocket (gobwas/ws for the upgrade, binary messages
// framed here, several to a write when pipelined; text messages with
// -text, whose echoes must come back as text);
// tcp:// URLs send the same bytes without framing and read back as many.
// wss:// and tls:// are the same in TLS (-ca, -insecure).
// Every echo is compared with the message sent.
package echo

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/target"
)

// Modes.
const (
	Sync      = "sync"
	Pipelined = "pipelined"
	Rate      = "rate"
)

// Modes lists the modes, for -mode.
var Modes = []string{Sync, Pipelined, Rate}

// Defaults and bounds.
const (
	DefaultURL      = "ws://127.0.0.1:8080/"
	DefaultConns    = 100
	DefaultSize     = 128
	DefaultMode     = Sync
	DefaultInflight = 32
	DefaultRate     = 50000
	DefaultDuration = 10 * time.Second
	DefaultWarmup   = 2 * time.Second
	DefaultTimeout  = 5 * time.Second

	maxConns    = 1000000
	maxSize     = 16 << 20
	maxInflight = 1 << 16
	maxRate     = 100000000
	maxLoops    = 1024
)

// Config is one run of the scenario.
type Config struct {
	// -url (ws[s]://HOST:PORT/PATH, tcp://HOST:PORT or tls://HOST:PORT),
	// -ca, -insecure, -admin, -json, -csv,
	// -html
	scenario.Common
	Conns    int           // -c
	Size     int           // bytes per message
	Mode     string        // sync, pipelined or rate
	Inflight int           // pipelined: messages awaiting their echo per connection
	Rate     int           // rate: messages per second, all connections together
	Duration time.Duration // the measured window
	Warmup   time.Duration // before the window; not in the figures
	Timeout  time.Duration // bounds each dial, and the wait for the last echoes after the window
	PID      int           // the target's process id, for its CPU from /proc; 0 for none
	Loops    int           // pipelined over ws:// or tcp://: the client's event loops; 0 for half the cores
	Text     bool          // WebSocket: text messages (ASCII), not binary
}

// ParseFlags parses the scenario's flags. A bad value gives a one-line error
// that names the flag and the accepted form; -h gives flag.ErrHelp.
func ParseFlags(args []string) (Config, error) { return flags.Parse(args) }

// Usage prints the flags and their defaults.
func Usage(w io.Writer) { flags.Usage(w) }

// ownFlags defines the scenario's own flags on fs.
func ownFlags(fs *flag.FlagSet, cfg *Config) {
	flagset.Int(fs, &cfg.Conns, "c", DefaultConns, 1, maxConns, "`N` connections")
	flagset.Int(fs, &cfg.Size, "size", DefaultSize, 1, maxSize, "`BYTES` per message (the target's -max-message applies)")
	cfg.Mode = DefaultMode
	fs.Func("mode", fmt.Sprintf("`MODE`: sync (send, wait for the echo, repeat), pipelined (up to -inflight awaiting their echo per connection), rate (open loop at -rate in total) (default %s)", DefaultMode), func(s string) error {
		for _, m := range Modes {
			if s == m {
				cfg.Mode = s
				return nil
			}
		}
		return fmt.Errorf("want %s", strings.Join(Modes, ", "))
	})
	fs.BoolVar(&cfg.Text, "text", false, "WebSocket: send text messages (ASCII, the sequence number in hex), and want them back as text, not binary; many servers decode and check text as UTF-8, which binary spares them")
	flagset.Int(fs, &cfg.Inflight, "inflight", DefaultInflight, 1, maxInflight, "pipelined: `N` messages awaiting their echo on each connection")
	flagset.Int(fs, &cfg.Rate, "rate", DefaultRate, 1, maxRate, "rate: `MSG/S` sent by all connections together, evenly spread")
	flagset.Duration(fs, &cfg.Duration, "duration", DefaultDuration, false, "the measured window, after the warmup")
	flagset.Duration(fs, &cfg.Warmup, "warmup", DefaultWarmup, true, "traffic before the window that the figures leave out")
	flagset.Duration(fs, &cfg.Timeout, "timeout", DefaultTimeout, false, "bounds each dial, and the wait for the last echoes after the window")
	flagset.Int(fs, &cfg.Loops, "loops", 0, 0, maxLoops, "pipelined over ws:// or tcp://: `N` event loops (epoll) that read and write the connections; 0 for half the cores, at least one, which leaves the rest to a target on the same machine")
	flagset.PID(fs, &cfg.PID, "pid", "the target's process `ID`, on this machine: its CPU seconds come from /proc/PID/stat (for a target without /stats)")
}

// flags are the scenario's: the common ones, then its own (ownFlags).
var flags = scenario.Flags[Config, *Config]{Name: "echo", Own: ownFlags, Normalize: (*Config).normalize, Words: scenario.Words{
	Metrics: metrics, DefaultURL: DefaultURL,
	URL:   "`URL` of the target: ws://HOST:PORT/PATH (WebSocket), tcp://HOST:PORT (raw TCP echo, no framing), or wss://, tls:// for the same in TLS (see -ca, -insecure)",
	Admin: "`URL` of the target's admin listener, http://HOST:PORT, for /stats at the start and the end of the window" + scenario.AdminMore,
}}

// normalize checks the URL and fills in the admin address.
func (c *Config) normalize(set map[string]bool) error {
	u, err := target.ParseURL(c.URL)
	if err != nil {
		return err
	}
	c.URL = u.String
	if err := target.NotSocketIO(u, "echo"); err != nil {
		return err
	}
	if c.Text && u.TCP {
		return fmt.Errorf("flag -text: want a ws:// or wss:// -url, not %s: raw TCP has no frames to mark as text", c.URL)
	}
	if c.Shard.Set() {
		// This shard's connections and its part of the rate.
		c.Conns, _ = c.Shard.Split(c.Conns)
		c.Rate, _ = c.Shard.Split(c.Rate)
		if c.Conns == 0 || c.Rate == 0 {
			return fmt.Errorf("-shard %s leaves this shard no connections or no rate: give -c and -rate of at least %d", c.Shard, c.Shard.N)
		}
	}
	return c.ResolveAdmin(set, u.Host)
}

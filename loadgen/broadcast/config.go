// Package broadcast is the fan-out scenario of loadgen, for targets that
// speak the echo/broadcast protocol of hashrocket/websocket-shootout
// (knowngood's broadcast-* variants, or any server written for it).
//
// Subscribers connect in batches, from several source addresses if asked,
// and then either -senders connections send broadcast messages at -rate in
// total, each carrying its sender, a sequence number and the send time, or
// (-push) everyone listens to the server's timed push. Every subscriber
// checks what it receives: the receive latency from the send time (same
// machine, same clock), and per sender (or for the push) the sequence
// numbers, so that a lost message and a duplicate are each counted. Senders
// time each broadcastResult and check its listenerCount.
package broadcast

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/target"
)

// Defaults and bounds.
const (
	DefaultURL         = "ws://127.0.0.1:8080/"
	DefaultSubscribers = 1000
	DefaultSenders     = 10
	DefaultRate        = 100
	DefaultBatch       = 1000
	DefaultDuration    = 10 * time.Second
	DefaultTimeout     = 10 * time.Second
	DefaultPayload     = 0

	maxSubscribers = 1000000
	maxSenders     = 10000
	maxRate        = 1000000
	maxPayload     = 1 << 20
)

// Config is one run of the scenario.
type Config struct {
	// -url (ws[s]://HOST:PORT/PATH), -ca, -insecure, -admin, -json, -csv,
	// -html
	scenario.Common
	Subscribers int
	Senders     int           // broadcast mode: connections that send
	Rate        int           // broadcast mode: broadcasts per second, all senders together
	Push        bool          // listen to the server's timed push instead of sending
	Payload     int           // broadcast mode: extra bytes of padding in each payload
	Batch       int           // connections dialled at once
	Sources     []netip.Addr  // source addresses, in turn
	Duration    time.Duration // the measured window
	Timeout     time.Duration // bounds each dial, and the wait for the last messages after the window
	// SenderBase numbers this shard's senders after the shards' before
	// it (-shard), so that every shard tells its own broadcasts apart.
	SenderBase int
}

// ParseFlags parses the scenario's flags. A bad value gives a one-line error
// that names the flag and the accepted form; -h gives flag.ErrHelp.
func ParseFlags(args []string) (Config, error) { return flags.Parse(args) }

// Usage prints the flags and their defaults.
func Usage(w io.Writer) { flags.Usage(w) }

// ownFlags defines the scenario's own flags on fs.
func ownFlags(fs *flag.FlagSet, cfg *Config) {
	flagset.Int(fs, &cfg.Subscribers, "subscribers", DefaultSubscribers, 1, maxSubscribers, "`N` connections that only listen (the open-files limit applies)")
	flagset.Int(fs, &cfg.Senders, "senders", DefaultSenders, 1, maxSenders, "`N` connections that send the broadcasts (they receive them too)")
	flagset.Int(fs, &cfg.Rate, "rate", DefaultRate, 1, maxRate, "`MSG/S`: broadcasts per second, all senders together, evenly spread")
	fs.BoolVar(&cfg.Push, "push", false, "send nothing: measure the server's timed push (start the target with -push-interval)")
	flagset.Int(fs, &cfg.Payload, "payload", DefaultPayload, 0, maxPayload, "`BYTES` of padding added to each broadcast's payload")
	flagset.Int(fs, &cfg.Batch, "batch", DefaultBatch, 1, maxSubscribers, "`N` connections dialled at once; the next batch starts when this one is done")
	flagset.Value(fs, &cfg.Sources, "sources", "source `ADDRESSES` used in turn, one per connection: a range (127.0.0.1-127.0.0.8), a list, or both (default: the kernel's choice)", target.ParseSources)
	flagset.Duration(fs, &cfg.Duration, "duration", DefaultDuration, false, "the measured window, once every connection is open")
	flagset.Duration(fs, &cfg.Timeout, "timeout", DefaultTimeout, false, "bounds each dial, and the wait for the last messages after the window")
}

// flags are the scenario's: the common ones, then its own (ownFlags).
var flags = scenario.Flags[Config, *Config]{Name: "broadcast", Own: ownFlags, Normalize: (*Config).normalize, Words: scenario.Words{
	Metrics: metrics, DefaultURL: DefaultURL,
	URL:   "`URL` of the target: ws://HOST:PORT/PATH, or wss://HOST:PORT/PATH in TLS (see -ca, -insecure; the subscribers then read on a goroutine each, not on event loops)",
	Admin: "`URL` of the target's admin listener, http://HOST:PORT, for /stats at the start and the end of the window" + scenario.AdminMore,
}}

// normalize checks the URL and the flags that go together, and fills in
// the admin address.
func (c *Config) normalize(set map[string]bool) error {
	u, err := target.ParseURL(c.URL)
	if err != nil {
		return err
	}
	if u.TCP {
		return errors.New("invalid value " + strconv.Quote(c.URL) + " for flag -url: the broadcast protocol needs WebSocket: want ws://HOST:PORT/PATH or wss://HOST:PORT/PATH")
	}
	if err := target.NotSocketIO(u, "broadcast"); err != nil {
		return err
	}
	if c.Push && (set["senders"] || set["rate"] || set["payload"]) {
		return errors.New("flag -push: the server sends; -senders, -rate and -payload are for broadcast mode")
	}
	if c.Push {
		c.Senders, c.Rate = 0, 0
	}
	c.URL = u.String
	if c.Shard.Set() {
		c.Subscribers, _ = c.Shard.Split(c.Subscribers)
		c.Senders, c.SenderBase = c.Shard.Split(c.Senders)
		c.Rate, _ = c.Shard.Split(c.Rate)
		if c.Subscribers == 0 || (!c.Push && (c.Senders == 0 || c.Rate == 0)) {
			return fmt.Errorf("-shard %s leaves this shard no subscribers, senders or rate: give -subscribers, -senders and -rate of at least %d", c.Shard, c.Shard.N)
		}
	}
	c.Batch = min(c.Batch, c.Subscribers+c.Senders)
	return c.ResolveAdmin(set, u.Host)
}

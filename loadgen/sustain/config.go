// Package sustain is the sustain scenario of loadgen: Socket.IO clients
// over WebSocket that stay connected, ramped up in steps, each emitting an
// acknowledged event every few seconds and listening to pushes to its
// room, some of them emitting those pushes; a client that loses its
// connection reconnects with exponential back-off and jitter. It reports
// each step: connections held, connect success, emit and push latency,
// connections lost and reconnected.
package sustain

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/flagset"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/internal/threshold"
)

// Defaults.
const (
	DefaultURL          = "http://127.0.0.1:8080"
	DefaultN            = 1000
	DefaultSteps        = 10
	DefaultStepDuration = 30 * time.Second
	DefaultEmitMin      = time.Second
	DefaultEmitMax      = 5 * time.Second
	DefaultRooms        = 100
	DefaultPushRate     = 10.0
	DefaultDeadline     = 15 * time.Second
	DefaultAckTimeout   = 10 * time.Second
	DefaultInflight     = 200
	DefaultBackoff      = 500 * time.Millisecond
	DefaultBackoffMax   = 10 * time.Second
	DefaultEvent        = "echo"
	maxN                = 1000000
)

// Config is one run of the scenario.
type Config struct {
	// -url (http(s)://HOST:PORT), -admin, -json, -csv, -html, -shard
	scenario.Common
	N            int           // clients in all, at the last step
	Steps        int           // steps of the ramp
	StepDuration time.Duration // how long each step lasts
	EmitMin      time.Duration // each client's emits come every EmitMin..EmitMax, uniformly
	EmitMax      time.Duration
	Event        string  // the event each client emits, with an ack that must carry it back
	Rooms        int     // rooms the clients are spread over (client i in room i mod Rooms)
	PushRate     float64 // room pushes per second, all clients together (0 = none)
	Churn        float64 // share of the held clients that leave and come back at each step's start
	Deadline     time.Duration
	AckTimeout   time.Duration
	Inflight     int  // connects under way at once
	Reconnect    bool // a lost client connects again, after a back-off
	Backoff      time.Duration
	BackoffMax   time.Duration
	Hops         bool         // emits and pushes ask the target for hop stamps
	Loop         bool         // the lean client reads on event loops, not a goroutine per connection
	Client       string       // ClientLean or ClientZishang520
	Sources      []netip.Addr // source addresses, client i dials from Sources[i mod len]; none = the kernel's choice
	// StartAt is when the first step starts (-start-at), for shards
	// started apart to step together; zero: at once.
	StartAt time.Time

	offset int // the first client's number in this shard
}

// metrics are what -threshold may name.
var metrics = []threshold.Metric{
	{Name: "success", Kind: threshold.Share, Help: "connects that succeeded, of all attempts (reconnects included)"},
	{Name: "held", Kind: threshold.Number, Help: "clients connected at the end of the last step"},
	{Name: "p99", Kind: threshold.Duration, Help: "99th percentile of the emits' ack latency, every step"},
	{Name: "push_p99", Kind: threshold.Duration, Help: "99th percentile of the room pushes' delivery latency"},
	{Name: "lost", Kind: threshold.Number, Help: "connections the clients lost without closing them"},
	{Name: "ack_errors", Kind: threshold.Number, Help: "emits whose ack did not come (timeout or disconnect)"},
}

// ParseFlags parses the scenario's flags. A bad value gives a one-line error
// that names the flag and the accepted form; -h gives flag.ErrHelp.
func ParseFlags(args []string) (Config, error) { return flags.Parse(args) }

// Usage prints the flags and their defaults.
func Usage(w io.Writer) { flags.Usage(w) }

// ownFlags defines the scenario's own flags on fs.
func ownFlags(fs *flag.FlagSet, cfg *Config) {
	flagset.Int(fs, &cfg.N, "n", DefaultN, 1, maxN, "`N` clients in all, reached at the last step")
	flagset.Int(fs, &cfg.Steps, "steps", DefaultSteps, 1, 1000, "`STEPS` of the ramp: step k (from 1) holds k x N / STEPS clients")
	flagset.Duration(fs, &cfg.StepDuration, "step-duration", DefaultStepDuration, false, "`DURATION` of each step")
	cfg.EmitMin, cfg.EmitMax = DefaultEmitMin, DefaultEmitMax
	fs.Func("emit-interval", "`MIN-MAX` between one client's emits, uniformly at random, or one DURATION (default 1s-5s)", func(v string) error {
		lo, hi, err := parseInterval(v)
		cfg.EmitMin, cfg.EmitMax = lo, hi
		return err
	})
	fs.StringVar(&cfg.Event, "event", DefaultEvent, "`EVENT` each client emits with an ack that carries its argument back (the targets' echo)")
	flagset.Int(fs, &cfg.Rooms, "rooms", DefaultRooms, 1, maxN, "`ROOMS` the clients join, client i room i mod ROOMS")
	fs.Float64Var(&cfg.PushRate, "push-rate", DefaultPushRate, "room pushes per `SECOND`, all shards together: a client emits broadcast-room to the next room, whose members receive it as \"broadcast\" (0 = none)")
	fs.Float64Var(&cfg.Churn, "churn", 0, "`SHARE` (0-1) of the held clients that disconnect and connect again at the start of each step after the first")
	flagset.Duration(fs, &cfg.Deadline, "deadline", DefaultDeadline, false, "`DURATION` allowed for each connect, to its namespace CONNECT")
	flagset.Duration(fs, &cfg.AckTimeout, "ack-timeout", DefaultAckTimeout, false, "`DURATION` an emit waits for its ack")
	flagset.Int(fs, &cfg.Inflight, "inflight", DefaultInflight, 1, 100000, "`N` connects under way at once")
	fs.BoolVar(&cfg.Reconnect, "reconnect", true, "a client that lost its connection (or failed to connect) tries again after an exponential back-off with jitter")
	flagset.Duration(fs, &cfg.Backoff, "backoff", DefaultBackoff, false, "`DURATION` of the first back-off; it doubles on each failure, up to -backoff-max, and each wait is drawn from its upper half")
	fs.BoolVar(&cfg.Hops, "hops", true, "every emit and push carries an object that asks a knowngood target for hop stamps, and the report splits their latency by hop (client to replica, replica, Redis, replica to client); a target that does not stamp echoes it back unchanged")
	fs.BoolVar(&cfg.Loop, "loop", true, "lean client: read the connections on gnet event loops (one per two cores) instead of a goroutine each, which costs a wake-up and two reads per message (http:// targets; https:// stays on goroutines)")
	fs.StringVar(&cfg.Client, "client", ClientLean, "Socket.IO `CLIENT`: lean (loadgen/siolite, on event loops with -loop, for 100,000 from one machine) or zishang520 (the Go client library users deploy, several goroutines and timers per connection)")
	target.SourcesVar(fs, &cfg.Sources, ", by client number; each gives its own ephemeral ports to one target, and connect() slows past half the range from one address to one port (lean client only)")
	flagset.Duration(fs, &cfg.BackoffMax, "backoff-max", DefaultBackoffMax, false, "`DURATION` the back-off grows to at most")
	fs.Func("start-at", "`TIME` (RFC 3339, 2026-12-07T15:04:05.5Z) at which the first step starts, within the hour, so that shards started apart, or on machines whose clocks agree, step together; a shard that starts later keeps the schedule, its first step shorter (default: at once)", func(v string) error {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return errors.New("want an RFC 3339 time such as 2026-12-07T15:04:05.5Z")
		}
		if time.Until(t) > maxStartWait {
			return fmt.Errorf("%s is more than %s from now (%s)", v, maxStartWait, time.Now().UTC().Format(time.RFC3339))
		}
		cfg.StartAt = t
		return nil
	})
}

// maxStartWait bounds -start-at: a time further off is more likely a
// mistake (a date, a time zone) than a plan.
const maxStartWait = time.Hour

// flags are the scenario's: the common ones, then its own (ownFlags).
var flags = scenario.Flags[Config, *Config]{Name: "sustain", Own: ownFlags, Normalize: (*Config).normalize, Words: scenario.Words{
	Metrics: metrics, DefaultURL: DefaultURL,
	URL:   "`URL` of the target, http://HOST:PORT (the clients use the WebSocket transport only)",
	Admin: "`URL` of the server's admin listener, http://HOST:PORT, for /stats before and after the run" + scenario.AdminMore,
}}

// parseInterval reads "1s-5s" or "2s".
func parseInterval(v string) (lo, hi time.Duration, err error) {
	a, b, ranged := strings.Cut(v, "-")
	if lo, err = time.ParseDuration(a); err != nil {
		return 0, 0, errors.New("want MIN-MAX durations (1s-5s) or one duration")
	}
	hi = lo
	if ranged {
		if hi, err = time.ParseDuration(b); err != nil {
			return 0, 0, errors.New("want MIN-MAX durations (1s-5s) or one duration")
		}
	}
	if lo <= 0 || hi < lo {
		return 0, 0, errors.New("want 0 < MIN <= MAX")
	}
	return lo, hi, nil
}

// normalize checks what the flag functions cannot check alone and takes
// this shard's part.
func (c *Config) normalize(set map[string]bool) error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("invalid value %q for flag -url: want http://HOST:PORT or https://HOST:PORT", c.URL)
	}
	c.URL = u.Scheme + "://" + u.Host
	switch {
	case c.PushRate < 0 || c.PushRate > 1e6:
		return fmt.Errorf("invalid value %g for flag -push-rate: want 0 to 1000000 a second", c.PushRate)
	case c.Churn < 0 || c.Churn > 1:
		return fmt.Errorf("invalid value %g for flag -churn: want a share from 0 to 1", c.Churn)
	case c.BackoffMax < c.Backoff:
		return fmt.Errorf("invalid value %s for flag -backoff-max: want at least -backoff (%s)", c.BackoffMax, c.Backoff)
	case c.Client != ClientLean && c.Client != ClientZishang520:
		return fmt.Errorf("invalid value %q for flag -client: want %s or %s", c.Client, ClientLean, ClientZishang520)
	case len(c.Sources) > 0 && c.Client != ClientLean:
		return fmt.Errorf("flag -sources: only with -client %s: the %s client binds no source address", ClientLean, c.Client)
	case c.Event == "":
		return errors.New("invalid value for flag -event: want an event name")
	}
	if c.Shard.Set() {
		total := c.N
		if c.N, c.offset = c.Shard.Split(total); c.N == 0 {
			return fmt.Errorf("-shard %s leaves this shard no clients: give -n of at least %d", c.Shard, c.Shard.N)
		}
		c.PushRate *= float64(c.N) / float64(total)
	}
	return c.ResolveAdmin(set, u.Hostname())
}

// target is the clients this shard holds during step k (from 0).
func (c Config) target(k int) int { return c.N * (k + 1) / c.Steps }

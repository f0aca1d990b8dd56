// Command soak runs every variant through rounds of connect, echo,
// disconnect, and checks after each round that the target's goroutines are
// back to where they were before the first (go_goroutines from /metrics)
// and that its resident memory stays within 10% of round 1's. A leak of a
// timer, a goroutine or a buffer per connection shows as a table row that
// does not come back.
//
//	go run ./scripts/soak [-rounds 10] [-n 5000] [-variants echo-gnet,empty]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/procfs"
)

var allVariants = strings.Join(variants.Names(), ",")

func main() {
	cfg := Config{}
	flag.IntVar(&cfg.Rounds, "rounds", 10, "rounds per variant")
	flag.IntVar(&cfg.N, "n", 5000, "connections per round (capped by the open-files limit)")
	flag.StringVar(&cfg.Variants, "variants", allVariants, "comma-separated variants")
	flag.DurationVar(&cfg.Settle, "settle", 30*time.Second, "how long a round may take to return to the baseline")
	// 4 MiB: even after a GC that returns freed pages, a target of about
	// 30 MiB moves by 2-4 MiB between rounds (the runtime's spans and
	// arenas), which is 10% there; a leak of 100 bytes a connection is
	// 5 MiB over 10 rounds of 5,000 and still shows.
	flag.Float64Var(&cfg.RSSSlackMiB, "rss-slack-mib", 4, "RSS growth allowed beyond 10% of round 1, in MiB")
	flag.Parse()
	err := Run(cfg, os.Stdout)
	harness.RemoveBuilds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// Config is one soak run. The harness builds the binary on the first
// start.
type Config struct {
	Rounds   int
	N        int
	Variants string
	Settle   time.Duration
	// RSSSlackMiB is allowed on top of 10% of round 1.
	RSSSlackMiB float64
}

// Run soaks every variant and writes the table; the error lists the
// rounds that did not come back.
func Run(cfg Config, w io.Writer) error {
	soft, err := procfs.OpenFilesSoft(procfs.Self)
	if err != nil {
		return fmt.Errorf("soak sizes its rounds by the open-files limit, which it cannot read here: %w", err)
	}
	// The clients and the target share the machine's limit: each side
	// holds n descriptors, plus room for the rest.
	n := min(cfg.N, soft-200)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tround\tconnections\techoed\tgoroutines\tbaseline\tRSS MiB\tvs round 1\t")
	var problems []error
	for _, v := range strings.Split(cfg.Variants, ",") {
		if err := soak(cfg, v, n, tw, &problems); err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", v, err))
		}
	}
	_ = tw.Flush()
	return errors.Join(problems...)
}

func soak(cfg Config, variant string, n int, tw io.Writer, problems *[]error) error {
	// -pprof for /debug/freeosmemory: RSS is read after a GC that returns
	// the freed pages, so that rounds compare live memory, not garbage.
	args := []string{"-variant", variant, "-pprof"}
	if v, _ := variants.Lookup(variant); v.Reads("delay") {
		args = append(args, "-delay", "1ms") // connects do not queue behind the blocking loop
	}
	t, err := startTarget(args...)
	if err != nil {
		return err
	}
	defer t.Stop()
	// A first round that is not counted: pools, the runtime's own
	// goroutines and the libraries' lazily started ones are there after
	// it. The baseline is the goroutine count once it holds still.
	if _, err := roundTrip(variant, t.Addr, min(n, 100)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	// gnet's Register runs on an ants pool whose idle workers live 10 s:
	// still means still for longer than that there.
	still := time.Second
	if strings.HasSuffix(variant, "-gnet") {
		still = 12 * time.Second
	}
	baseline, err := t.steady(still, cfg.Settle)
	if err != nil {
		return err
	}
	var rss1 float64
	for round := 1; round <= cfg.Rounds; round++ {
		echoed, err := roundTrip(variant, t.Addr, n)
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		// Back to the baseline, or the deadline.
		var g, rss float64
		for end := time.Now().Add(cfg.Settle); ; time.Sleep(100 * time.Millisecond) {
			if g, _, err = t.gauges(); err != nil {
				return err
			}
			if g <= baseline || time.Now().After(end) {
				break
			}
		}
		if rss, err = t.rssAfterGC(); err != nil {
			return err
		}
		if round == 1 {
			rss1 = rss
		}
		ratio := rss / rss1
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.0f\t%.1f\t%+.1f%%\t\n", variant, round, n, echoed, g, baseline, rss/(1<<20), 100*(ratio-1))
		// Below the baseline is fine: a pool worker that the warm-up
		// left has expired since.
		if g > baseline {
			*problems = append(*problems, fmt.Errorf("%s round %d: %.0f goroutines, baseline %.0f; the target's goroutines now:\n%s", variant, round, g, baseline, t.goroutines()))
		}
		if rss > rss1*1.10+cfg.RSSSlackMiB*(1<<20) {
			*problems = append(*problems, fmt.Errorf("%s round %d: RSS %.1f MiB, %.0f%% over round 1", variant, round, rss/(1<<20), 100*(ratio-1)))
		}
		if echoed != n {
			*problems = append(*problems, fmt.Errorf("%s round %d: %d of %d echoed", variant, round, echoed, n))
		}
	}
	return nil
}

// roundTrip opens n connections (100 at a time), echoes once on each while
// all are open, and closes them; it returns how many echoed.
func roundTrip(variant, addr string, n int) (int, error) {
	conns := make([]io.Closer, n)
	var mu sync.Mutex
	echoed := 0
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := dialEcho(variant, addr)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmpErr(firstErr, err)
				return
			}
			conns[i] = c
			echoed++
		})
	}
	wg.Wait()
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
	if echoed == 0 {
		return 0, firstErr
	}
	return echoed, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// dialEcho connects and echoes one message.
func dialEcho(variant, addr string) (io.Closer, error) {
	const timeout = 10 * time.Second
	v, _ := variants.Lookup(variant)
	switch {
	case v.Protocol == variants.TCP:
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		_ = c.SetDeadline(time.Now().Add(timeout))
		_, _ = c.Write([]byte("soak"))
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	case v.Family == variants.SocketIO:
		// The zishang520 client, through loadgen/sioclient (which works
		// around its races).
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c, err := sioclient.Connect(ctx, sioclient.Options{URL: "http://" + addr, Transport: sioclient.WebSocket, OpenTimeout: timeout + time.Second})
		if err != nil {
			return nil, err
		}
		if err := c.Echo(ctx, "soak"); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	default:
		d := websocket.Dialer{HandshakeTimeout: timeout}
		c, _, err := d.Dial("ws://"+addr+"/", nil)
		if err != nil {
			return nil, err
		}
		msg := "soak"
		if v.Family == variants.Broadcast {
			msg = `{"type":"echo","payload":"soak"}`
		}
		_ = c.SetReadDeadline(time.Now().Add(timeout))
		_ = c.WriteMessage(websocket.TextMessage, []byte(msg))
		if _, got, err := c.ReadMessage(); err != nil || string(got) != msg {
			c.Close()
			return nil, fmt.Errorf("echo: %q, %v", got, err)
		}
		return c, nil
	}
}

// target is a running knowngood and its admin listener's base URL.
type target struct {
	*harness.Process
	admin string
}

func startTarget(args ...string) (*target, error) {
	p, err := harness.StartKnowngood(context.Background(), nil, args...)
	if err != nil {
		return nil, err
	}
	return &target{Process: p, admin: p.AdminURL()}, nil
}

// steady waits until go_goroutines holds still for the time still (or d
// passes) and returns it.
func (t *target) steady(still, d time.Duration) (float64, error) {
	prev, since := -1.0, time.Now()
	for end := time.Now().Add(max(d, still+time.Second)); ; time.Sleep(250 * time.Millisecond) {
		g, _, err := t.gauges()
		if err != nil || time.Now().After(end) {
			return g, err
		}
		if g != prev {
			prev, since = g, time.Now()
		} else if time.Since(since) >= still {
			return g, nil
		}
	}
}

// rssAfterGC asks the target to collect and return freed memory to the
// system, then reads its resident memory.
func (t *target) rssAfterGC() (float64, error) {
	resp, err := http.Post(t.admin+"/debug/freeosmemory", "", nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return 0, fmt.Errorf("POST /debug/freeosmemory: %s", resp.Status)
	}
	_, rss, err := t.gauges()
	return rss, err
}

// goroutines is the target's goroutine profile, grouped by stack
// (/debug/pprof/goroutine?debug=1), or why it could not be read: what a
// goroutine left over after a round is doing.
func (t *target) goroutines() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.admin+"/debug/pprof/goroutine?debug=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// gauges reads go_goroutines and process_resident_memory_bytes.
func (t *target) gauges() (goroutines, rss float64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.admin+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "go_goroutines":
			goroutines, _ = strconv.ParseFloat(value, 64)
		case "process_resident_memory_bytes":
			rss, _ = strconv.ParseFloat(value, 64)
		}
	}
	return goroutines, rss, sc.Err()
}

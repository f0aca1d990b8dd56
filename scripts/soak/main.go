// Command soak runs every variant through rounds of connect, echo,
// disconnect, and checks after each round that the target's goroutines are
// back to where they were before the first (its goroutine profile, less
// the idle workers of gnet's ants pool, which expire on their own clock)
// and that its resident memory stays within 10% of round 1's; after the
// last round, that the pool's idle workers have expired too. A leak of a
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
	fmt.Fprintln(tw, "variant\tround\tconnections\techoed\tgoroutines\tidle pool\tbaseline\tRSS MiB\tvs round 1\t")
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
	// it. The baseline is the goroutine count once it holds still for a
	// second. gnet runs Register on an ants pool whose idle workers live
	// 10-20 s (a purge every 10 s): they are left out of every count, so
	// that neither the baseline nor a round waits for them, and the last
	// check waits, once, for them to be gone.
	if _, err := roundTrip(variant, t.Addr, min(n, 100)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	baseline, err := t.steady(time.Second, cfg.Settle)
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
		var g goroutineCount
		var rss float64
		for end := time.Now().Add(cfg.Settle); ; time.Sleep(100 * time.Millisecond) {
			if g, err = t.count(); err != nil {
				return err
			}
			if g.busy() <= baseline || time.Now().After(end) {
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
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%+.1f%%\t\n", variant, round, n, echoed, g.busy(), g.idlePool, baseline, rss/(1<<20), 100*(ratio-1))
		// Below the baseline is fine: a goroutine that the warm-up left
		// (a lazily started one that stops when idle) has ended since.
		if g.busy() > baseline {
			*problems = append(*problems, fmt.Errorf("%s round %d: %d goroutines (and %d idle pool workers), baseline %d; the target's goroutines now:\n%s", variant, round, g.busy(), g.idlePool, baseline, t.goroutines()))
		}
		if rss > rss1*1.10+cfg.RSSSlackMiB*(1<<20) {
			*problems = append(*problems, fmt.Errorf("%s round %d: RSS %.1f MiB, %.0f%% over round 1", variant, round, rss/(1<<20), 100*(ratio-1)))
		}
		if echoed != n {
			*problems = append(*problems, fmt.Errorf("%s round %d: %d of %d echoed", variant, round, echoed, n))
		}
	}
	// Every goroutine, the pool's idle workers too, back to the baseline:
	// a pool that never lets its workers go is a leak as well.
	for end := time.Now().Add(cfg.Settle); ; time.Sleep(250 * time.Millisecond) {
		g, err := t.count()
		if err != nil {
			return err
		}
		if g.total <= baseline {
			return nil
		}
		if time.Now().After(end) {
			*problems = append(*problems, fmt.Errorf("%s: %d goroutines (%d of them idle pool workers) %s after the last round, baseline %d; the target's goroutines now:\n%s", variant, g.total, g.idlePool, cfg.Settle, baseline, t.goroutines()))
			return nil
		}
	}
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

// steady waits until the goroutines, less the pool's idle workers, hold
// still for the time still (or d passes) and returns their number.
func (t *target) steady(still, d time.Duration) (int, error) {
	prev, since := -1, time.Now()
	for end := time.Now().Add(max(d, still+time.Second)); ; time.Sleep(250 * time.Millisecond) {
		g, err := t.count()
		if err != nil || time.Now().After(end) {
			return g.busy(), err
		}
		if g.busy() != prev {
			prev, since = g.busy(), time.Now()
		} else if time.Since(since) >= still {
			return prev, nil
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
	return t.gauges()
}

// goroutines is the target's goroutine profile, grouped by stack
// (/debug/pprof/goroutine?debug=1), or why it could not be read: what a
// goroutine left over after a round is doing.
func (t *target) goroutines() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := t.profile(ctx)
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

// profile asks the target for its goroutine profile, grouped by stack
// (/debug/pprof/goroutine?debug=1): the one request goroutines and count
// make.
func (t *target) profile(ctx context.Context) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.admin+"/debug/pprof/goroutine?debug=1", nil)
	return http.DefaultClient.Do(req)
}

// goroutineCount is one goroutine profile of the target: every goroutine,
// and the idle workers of an ants pool among them.
type goroutineCount struct{ total, idlePool int }

// busy is every goroutine but the pool's idle workers.
func (g goroutineCount) busy() int { return g.total - g.idlePool }

// count reads the target's goroutine profile (/debug/pprof/goroutine?debug=1):
// both figures come from the one snapshot, so a worker that expires
// between two reads cannot make them disagree.
func (t *target) count() (goroutineCount, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := t.profile(ctx)
	if err != nil {
		return goroutineCount{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return goroutineCount{}, fmt.Errorf("GET /debug/pprof/goroutine: %s", resp.Status)
	}
	return parseProfile(resp.Body)
}

// parseProfile reads a debug=1 goroutine profile: "goroutine profile:
// total N", then groups of "K @ pc..." with one "#\tpc\tfunction+off\tfile"
// line a frame, innermost first, runtime frames left out. A group whose
// innermost frame is an ants worker's run loop is idle workers waiting for
// a task; a worker running one has the task's frames above it, and counts.
func parseProfile(r io.Reader) (goroutineCount, error) {
	var g goroutineCount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seenTotal, group, first := false, 0, false
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "goroutine profile: total "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				return g, fmt.Errorf("goroutine profile: %q", line)
			}
			g.total, seenTotal = n, true
			continue
		}
		if k, _, ok := strings.Cut(line, " @ "); ok {
			if n, err := strconv.Atoi(k); err == nil {
				group, first = n, true
				continue
			}
		}
		if f := strings.Fields(line); first && len(f) >= 3 && f[0] == "#" {
			first = false
			if strings.HasPrefix(f[2], "github.com/panjf2000/ants/v2.(*goWorker") && strings.Contains(f[2], ").run.func1+") {
				g.idlePool += group
			}
		}
	}
	if err := sc.Err(); err != nil {
		return g, err
	}
	if !seenTotal {
		return g, fmt.Errorf("no goroutine profile (the target needs -pprof)")
	}
	return g, nil
}

// gauges reads process_resident_memory_bytes from /metrics.
func (t *target) gauges() (rss float64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.admin+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if name == "process_resident_memory_bytes" {
			rss, _ = strconv.ParseFloat(value, 64)
		}
	}
	return rss, sc.Err()
}

package servers

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEMFILE: every variant, a Socket.IO one on each engine, under an
// open-files limit of 128 (prlimit on the process), with 200 clients at
// once: the first ones connect and keep
// echoing, the rest are refused promptly (not left to their timeout), the
// target counts each refused client once in accept_errors{reason="EMFILE"}
// (not each failed accept: at the limit they fail with nobody waiting) and
// logs about it at most once a second, and once some clients leave, new
// ones get in.
func TestEMFILE(t *testing.T) {
	t.Parallel()
	const limit, clients = 128, 200
	for _, run := range allRuns() {
		v := run.variant
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			// /stats is read on one kept-alive connection, opened here
			// while descriptors are free; -idle-timeout keeps it open
			// however long the clients take to connect on a busy machine.
			s := startServerUnder(t, []string{"prlimit", "--nofile=128"}, append(run.args, "-idle-timeout", "5m")...)
			s.stats(t)
			addr := strings.TrimPrefix(s.url, "http://")
			began := time.Now()

			var mu sync.Mutex
			var held []peer
			refused := 0
			var slowest time.Duration
			var wg sync.WaitGroup
			sem := make(chan struct{}, 50)
			for i := range clients {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					start := time.Now()
					p, err := connect(v, addr, nil, 10*time.Second)
					if err == nil {
						if err = p.echo("first"); err != nil {
							p.Close()
						}
					}
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						refused++
						slowest = max(slowest, time.Since(start))
						return
					}
					held = append(held, p)
					_ = i
				})
			}
			wg.Wait()
			t.Logf("%s: %d of %d connected under %d open files; the slowest refusal took %v", v, len(held), clients, limit, slowest)
			defer func() {
				for _, p := range held {
					p.Close()
				}
			}()
			if len(held) < limit/2 || len(held) >= clients {
				t.Fatalf("%d of %d connected; want most of the %d descriptors used, and some refused", len(held), clients, limit)
			}
			if slowest > 8*time.Second {
				t.Errorf("a refused client waited %v: refusals should be prompt", slowest)
			}
			for i, p := range held {
				if err := p.echo("still"); err != nil {
					t.Fatalf("held connection %d stopped echoing: %v", i, err)
				}
			}
			// At the limit with nobody connecting, the accept loop keeps
			// failing (once a second at its slowest): no client is
			// refused, so nothing is counted.
			atLimit := s.stats(t).AcceptErrors["EMFILE"]
			time.Sleep(2500 * time.Millisecond)
			if quiet := s.stats(t).AcceptErrors["EMFILE"]; quiet != atLimit {
				t.Errorf("accept_errors{EMFILE} went from %d to %d while no client connected", atLimit, quiet)
			}

			// Some leave: new clients get in again.
			for _, p := range held[:40] {
				p.Close()
			}
			held = held[40:]
			for i := range 20 {
				var p peer
				var err error
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
					if p, err = connect(v, addr, nil, 5*time.Second); err == nil {
						if err = p.echo("again"); err == nil {
							break
						}
						p.Close()
					}
					refused++
				}
				if err != nil {
					t.Fatalf("new client %d after 40 left: %v", i, err)
				}
				held = append(held, p)
			}

			st := s.stats(t)
			t.Logf("%s: accept errors %v", v, st.AcceptErrors)
			if got := st.AcceptErrors["EMFILE"]; got != uint64(refused) {
				t.Errorf("accept_errors %v, want EMFILE %d: each refused client once", st.AcceptErrors, refused)
			}
			lines := strings.Count(s.log(), `"msg":"accept failed`)
			if secs := time.Since(began).Seconds(); float64(lines) > secs+2 {
				t.Errorf("%d accept-failure log lines in %.1fs: more than one a second", lines, secs)
			}
			if lines == 0 {
				t.Errorf("no log line about the failed accepts:\n%s", s.log())
			}
		})
	}
}

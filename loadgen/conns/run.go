package conns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"knowngood/loadgen/internal/proc"
	"knowngood/loadgen/internal/progress"
	"knowngood/loadgen/internal/statsclient"
	"knowngood/loadgen/internal/tally"
	"knowngood/loadgen/internal/target"
	"knowngood/loadgen/internal/verdict"
	"knowngood/loadgen/timeline"
	"knowngood/shared/protocol"
)

// kindDropped: a connection lost while held (the others are target's).
const kindDropped = "dropped while held"

const (
	// closeWait bounds the wait for the connections' readers to end once
	// every connection is closed.
	closeWait = 10 * time.Second
	// closeParallel bounds the closes in progress at once.
	closeParallel = 64
	// wsReadBuffer is small: an idle connection reads nothing, and the
	// client's memory is not what is measured.
	wsReadBuffer = 1024
)

// Run opens cfg.N idle connections in batches, holds them for cfg.Hold, and
// reports. The open-files budget goes to notes first, one line; a -n beyond
// it is refused. It returns an error only when the run could not take
// place at all.
func Run(ctx context.Context, cfg Config, notes io.Writer) (*Report, error) {
	files, err := proc.OpenFiles()
	if err != nil {
		fmt.Fprintf(notes, "loadgen: open-files limit unknown (%v); going on\n", err)
	} else {
		fmt.Fprintf(notes, "loadgen: %s\n", files)
		if err := files.Check("n", cfg.N); err != nil {
			return nil, err
		}
	}
	rep, err := run(ctx, cfg, notes)
	if rep != nil && err == nil {
		rep.OpenFiles = files.String()
		rep.OpenFilesAllow = files.Allows()
	}
	return rep, err
}

// held is one open connection: its close, and a reader that notices when
// the target drops it.
type held struct {
	close func()
	read  func() error // blocks until the connection ends
}

func run(ctx context.Context, cfg Config, notes io.Writer) (*Report, error) {
	u, err := target.ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	rep := newReport(cfg, u)
	errs := &tally.Errors{}
	var stats *statsclient.Client
	if cfg.Admin != "" {
		stats = statsclient.New(cfg.Admin)
		defer stats.Close()
	}
	var config map[string]string
	if stats != nil {
		config, _ = stats.Config(ctx) // without it, the verdicts that need it are left out
	}
	began := time.Now()
	before := takeSample(ctx, stats, cfg.PID)
	cpu0 := proc.SelfCPUSeconds()

	var (
		mu      sync.Mutex
		conns   []held
		alive   atomic.Int64 // established and not dropped
		closing atomic.Bool  // set before the run closes them: their ends are not drops
		readers sync.WaitGroup
	)
	writePool := &target.BufferPool{}
	dial := func(ctx context.Context, src netip.Addr) (held, error) {
		opts := target.Options{Timeout: cfg.Timeout, Source: src, ReadBuffer: wsReadBuffer, WriteBuffer: wsReadBuffer, WriteBufferPool: writePool}
		if u.TCP {
			c, err := target.DialTCP(ctx, u, opts)
			if err != nil {
				return held{}, err
			}
			return held{close: func() { _ = c.Close() }, read: func() error {
				var b [512]byte
				for {
					if _, err := c.Read(b[:]); err != nil {
						return err
					}
				}
			}}, nil
		}
		c, err := target.DialWebSocket(ctx, u, opts)
		if err != nil {
			return held{}, err
		}
		return held{
			close: func() {
				msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
				_ = c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
				_ = c.Close()
			},
			read: func() error {
				for {
					if _, _, err := c.NextReader(); err != nil {
						return err
					}
				}
			},
		}, nil
	}

	start := time.Now()
	tl := timeline.New(start)
	bar := progress.Count(notes, cfg.N, "connecting")
	rep.Batches = target.Ramp(ctx, cfg.N, cfg.Batch, cfg.Sources, errs, func(ctx context.Context, _ int, src netip.Addr) error {
		defer bar.Add(1)
		t0 := time.Now()
		h, err := dial(ctx, src)
		t1 := time.Now()
		if err != nil {
			tl.Error(t1)
			return err
		}
		tl.Record(t1, t1.Sub(t0))
		alive.Add(1)
		mu.Lock()
		conns = append(conns, h)
		mu.Unlock()
		readers.Go(func() {
			err := h.read()
			if !closing.Load() {
				alive.Add(-1)
				errs.Add(kindDropped, 1, err)
			}
		})
		return nil
	})
	bar.Done()
	rep.EstablishSeconds = time.Since(start).Seconds()
	rep.Samples = tl.Samples(time.Since(start))
	rep.Established = len(conns)
	rep.Failed = cfg.N - rep.Established
	fmt.Fprintf(notes, "loadgen: %d connections established in %.2fs; holding them %s\n", rep.Established, rep.EstablishSeconds, cfg.Hold)

	bar = progress.Timed(notes, cfg.Hold, "holding")
	hold := time.NewTimer(cfg.Hold)
	select {
	case <-hold.C:
	case <-ctx.Done():
		hold.Stop()
	}
	bar.Done()
	// Held counts the connections alive when the target's memory is read.
	rep.Held = int(alive.Load())
	after := takeSample(ctx, stats, cfg.PID)
	rep.ClientCPUSeconds = proc.SelfCPUSeconds() - cpu0
	var freed *sample
	if cfg.FreeOSMemory && stats != nil {
		if err := stats.FreeOSMemory(ctx); err != nil {
			freed = &sample{procErr: err, serverErr: err}
		} else {
			s := takeSample(ctx, stats, cfg.PID)
			freed = &s
		}
	}
	rep.Dropped = rep.Established - rep.Held

	closing.Store(true)
	closeAll(conns)
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()
	select {
	case <-readersDone:
	case <-time.After(closeWait):
		fmt.Fprintf(notes, "loadgen: connections still closing after %s\n", closeWait)
	}
	rep.Errors = errs.Map()
	rep.Server, rep.ServerError = serverView(cfg, before, after, freed, rep.Held)
	judge := verdict.Run{Attempts: cfg.N, Connected: rep.Established, Deadline: cfg.Timeout, Sent: -1, Received: -1,
		ClientCPU: rep.ClientCPUSeconds, Window: time.Since(began), Cores: runtime.GOMAXPROCS(0), Config: config, ServerCPU: -1}
	if b, a := before.server, after.server; b != nil && a != nil && before.serverErr == nil && after.serverErr == nil {
		d := protocol.Diff(b.Stats, a.Stats)
		judge.Server = &d
		if b.CPUSeconds != nil && a.CPUSeconds != nil {
			judge.ServerCPU = *a.CPUSeconds - *b.CPUSeconds
		}
	}
	rep.Verdicts = verdict.Judge(judge)
	if rep.ServerError != "" {
		fmt.Fprintf(notes, "loadgen: %s\n", rep.ServerError)
	}
	return rep, nil
}

// closeAll closes the connections, closeParallel at a time.
func closeAll(conns []held) {
	sem := make(chan struct{}, closeParallel)
	var wg sync.WaitGroup
	for _, h := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			h.close()
		})
	}
	wg.Wait()
}

// sample is the target's memory at one moment.
type sample struct {
	server    *statsclient.Snapshot
	serverErr error
	procRSS   float64
	procErr   error
}

func takeSample(ctx context.Context, stats *statsclient.Client, pid int) sample {
	var s sample
	if pid != 0 {
		s.procRSS, s.procErr = proc.ResidentBytes(pid)
	}
	if stats != nil {
		snap, err := stats.Get(ctx)
		s.server, s.serverErr = &snap, err
	}
	return s
}

// rss is the sample's RSS from source ("proc" or "stats").
func (s sample) rss(source string) (float64, error) {
	if source == "proc" {
		return s.procRSS, s.procErr
	}
	if s.serverErr != nil {
		return 0, s.serverErr
	}
	if s.server == nil || s.server.ResidentBytes == nil {
		return 0, errors.New("no resident memory in /stats")
	}
	return *s.server.ResidentBytes, nil
}

// serverView combines the samples: RSS from /proc when -pid is given, else
// from /stats; freed (with -free-os-memory) is after the target returned
// its free memory. The string says what failed.
func serverView(cfg Config, before, after sample, freed *sample, heldConns int) (*ServerView, string) {
	v := &ServerView{PID: cfg.PID}
	var problems []error
	if cfg.PID != 0 {
		if err := errors.Join(before.procErr, after.procErr); err != nil {
			problems = append(problems, fmt.Errorf("no RSS of process %d: %w", cfg.PID, err))
		} else {
			v.RSSBefore, v.RSSAfter, v.RSSSource = &before.procRSS, &after.procRSS, "proc"
		}
	}
	if cfg.Admin != "" {
		if err := errors.Join(before.serverErr, after.serverErr); err != nil {
			problems = append(problems, fmt.Errorf("no /stats from %s: %w", cfg.Admin, err))
		} else {
			b, a := before.server, after.server
			v.Admin, v.Variant = cfg.Admin, a.Variant
			v.ConnectionsActive = &a.ConnectionsActive
			d := protocol.Diff(b.Stats, a.Stats)
			v.ConnectionsOpened = &d.ConnectionsTotal
			if v.RSSSource == "" && b.ResidentBytes != nil && a.ResidentBytes != nil {
				v.RSSBefore, v.RSSAfter, v.RSSSource = b.ResidentBytes, a.ResidentBytes, "stats"
			}
		}
	}
	if v.RSSSource != "" && heldConns > 0 {
		per := (*v.RSSAfter - *v.RSSBefore) / float64(heldConns)
		v.BytesPerConnection = &per
		if freed != nil {
			if rss, err := freed.rss(v.RSSSource); err != nil {
				problems = append(problems, fmt.Errorf("-free-os-memory: %w", err))
			} else {
				v.RSSAfterFree = &rss
				perFree := (rss - *v.RSSBefore) / float64(heldConns)
				v.BytesPerConnectionAfterFree = &perFree
			}
		}
	}
	problem := ""
	if err := errors.Join(problems...); err != nil {
		problem = err.Error()
	}
	if v.Variant == "" && v.RSSSource == "" {
		return nil, problem
	}
	return v, problem
}

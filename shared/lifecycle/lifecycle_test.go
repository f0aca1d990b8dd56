package lifecycle_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"knowngood/shared/config"
	"knowngood/shared/lifecycle"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestListenBacklog(t *testing.T) {
	max := lifecycle.Somaxconn()
	for _, requested := range []int{0, 16, max + 1000} {
		ln, effective, err := lifecycle.Listen("127.0.0.1:0", requested)
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		want := min(requested, max)
		if requested == 0 {
			want = max
		}
		if effective != want {
			t.Errorf("backlog %d: effective %d, want %d", requested, effective, want)
		}
	}
}

// slowTarget's Shutdown takes as long as it is told to.
type slowTarget struct {
	srv  *http.Server
	stop time.Duration
}

func (s *slowTarget) Serve(ln net.Listener) error {
	if err := s.srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func (s *slowTarget) Shutdown(ctx context.Context) error {
	select {
	case <-time.After(s.stop):
	case <-ctx.Done():
	}
	_ = s.srv.Close()
	return ctx.Err()
}

func TestRunShutsDownWithinTimeout(t *testing.T) {
	for _, c := range []struct {
		stop    time.Duration
		wantErr string
	}{
		{0, ""},
		{time.Minute, "shutdown took longer than -shutdown-timeout 200ms"},
	} {
		cfg := config.Default()
		cfg.Addr, cfg.AdminAddr, cfg.ShutdownTimeout = "127.0.0.1:0", "127.0.0.1:0", 200*time.Millisecond
		target := &slowTarget{srv: &http.Server{}, stop: c.stop}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		listening := &lineWatch{want: "msg=listening", seen: make(chan struct{})}
		log := slog.New(slog.NewTextHandler(listening, nil))
		go func() { done <- lifecycle.Run(ctx, cfg, log, nil, target, http.NotFoundHandler()) }()
		select { // serving: the cancel below is a shutdown
		case <-listening.seen:
		case err := <-done:
			t.Fatalf("Run ended before it listened: %v", err)
		}
		began := time.Now()
		cancel()
		err := <-done
		if took := time.Since(began); took > time.Second {
			t.Errorf("stop %v: Run returned after %v, want within the 200ms timeout", c.stop, took)
		}
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("stop %v: err %v, want %q", c.stop, err, c.wantErr)
		}
	}
}

func TestRunReportsBadAddress(t *testing.T) {
	cfg := config.Default()
	cfg.Addr = "256.0.0.1:1"
	err := lifecycle.Run(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, &slowTarget{}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "-addr 256.0.0.1:1") {
		t.Errorf("err %v, want one that names -addr", err)
	}
}

// lineWatch closes seen at the first log line that contains want.
type lineWatch struct {
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWatch) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

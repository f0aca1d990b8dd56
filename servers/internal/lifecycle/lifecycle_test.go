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

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
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
		o := lifecycle.Options{Name: "test", Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ShutdownTimeout: 200 * time.Millisecond}
		target := &slowTarget{srv: &http.Server{}, stop: c.stop}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		listening := &lineWatch{want: "msg=listening", seen: make(chan struct{})}
		log := slog.New(slog.NewTextHandler(listening, nil))
		go func() { done <- lifecycle.Run(ctx, o, log, nil, target, http.NotFoundHandler()) }()
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
	o := lifecycle.Options{Name: "test", Addr: "256.0.0.1:1", ShutdownTimeout: time.Second}
	err := lifecycle.Run(context.Background(), o, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, &slowTarget{}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "-addr 256.0.0.1:1") {
		t.Errorf("err %v, want one that names -addr", err)
	}
}

// lineWatch closes seen at the first log line that contains want.
type lineWatch struct {
	want string
	seen chan struct{}
	once sync.Once
	mu   sync.Mutex
	text string // the line, once seen
}

func (w *lineWatch) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() {
			w.mu.Lock()
			w.text = string(p)
			w.mu.Unlock()
			close(w.seen)
		})
	}
	return len(p), nil
}

func (w *lineWatch) line() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text
}

// TestListeningURL: a target given WithURL has its URL on the "listening"
// line, built from the address it listens on, beside the fields scripts
// parse (addr, admin_addr).
func TestListeningURL(t *testing.T) {
	o := lifecycle.Options{Name: "test", Addr: "127.0.0.1:0", ShutdownTimeout: 5 * time.Second}
	target := lifecycle.WithURL(&slowTarget{srv: &http.Server{}}, func(hostport string, tls bool) string {
		return "ws://" + hostport + "/"
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := &lineWatch{want: "msg=listening", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- lifecycle.Run(ctx, o, slog.New(slog.NewTextHandler(listening, nil)), nil, target, nil)
	}()
	select {
	case <-listening.seen:
	case err := <-done:
		t.Fatalf("Run ended before it listened: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := listening.line()
	if !strings.Contains(got, "url=ws://127.0.0.1:") || !strings.Contains(got, " addr=127.0.0.1:") || !strings.Contains(got, "admin_addr=off") {
		t.Errorf("listening line %q, want url=ws://127.0.0.1:PORT/ beside addr and admin_addr", got)
	}
}

func TestPasteAddr(t *testing.T) {
	for in, want := range map[string]string{
		":8080": "127.0.0.1:8080", "0.0.0.0:8080": "127.0.0.1:8080", "[::]:8080": "127.0.0.1:8080",
		"127.0.0.2:9": "127.0.0.2:9", "[::1]:9": "[::1]:9", "example.org:80": "example.org:80",
	} {
		if got := lifecycle.PasteAddr(in); got != want {
			t.Errorf("PasteAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

package harness

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/leaktest"
	"github.com/knowngood/knowngood/shared/redisserver"
)

func TestMain(m *testing.M) { leaktest.Main(m, RemoveBuilds) }

// shell starts sh -c script as a server; the script prints the
// "listening" line itself.
func shell(t *testing.T, script string) (*Process, error) {
	t.Helper()
	return StartProcess(context.Background(), "sh", []string{"sh", "-c", script})
}

const listeningLine = `echo '{"msg":"listening","addr":"127.0.0.1:1","admin_addr":"127.0.0.1:2"}'`

func TestStartProcessReadsListeningLine(t *testing.T) {
	// The line split over two writes, after another line on stderr.
	p, err := shell(t, `echo starting >&2; printf '{"msg":"listen'; sleep 0.1; printf 'ing","addr":"127.0.0.1:1","admin_addr":"127.0.0.1:2"}\n'; exec sleep 60`)
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != "127.0.0.1:1" || p.AdminAddr != "127.0.0.1:2" || p.AdminURL() != "http://127.0.0.1:2" {
		t.Errorf("Addr %q, AdminAddr %q", p.Addr, p.AdminAddr)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if !strings.Contains(p.Log(), "starting\n") || !strings.Contains(p.Tail(), `"msg":"listening"`) {
		t.Errorf("log %q, tail %q", p.Log(), p.Tail())
	}
	// sleep's default action on SIGTERM is to die of it.
	var ee interface{ Sys() any }
	if err := p.ExitErr(); !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Errorf("ExitErr = %v, want death by SIGTERM", err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartProcessExitsEarly(t *testing.T) {
	_, err := shell(t, `echo cannot listen >&2; exit 3`)
	if err == nil || !strings.Contains(err.Error(), "exited before listening") || !strings.Contains(err.Error(), "cannot listen") {
		t.Errorf("err = %v", err)
	}
}

func TestStartProcessTimesOut(t *testing.T) {
	defer func(d time.Duration) { StartTimeout = d }(StartTimeout)
	StartTimeout = 200 * time.Millisecond
	_, err := shell(t, `echo quiet; exec sleep 60`)
	if err == nil || !strings.Contains(err.Error(), "did not say it listens") {
		t.Errorf("err = %v", err)
	}
}

func TestStopKillsAfterTimeout(t *testing.T) {
	defer func(d time.Duration) { StopTimeout = d }(StopTimeout)
	StopTimeout = 200 * time.Millisecond
	p, err := shell(t, `trap "" TERM; `+listeningLine+`; exec sleep 60`)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := p.Stop(); !errors.Is(err, ErrKilled) {
		t.Errorf("Stop = %v, want ErrKilled", err)
	}
	if took := time.Since(began); took < StopTimeout {
		t.Errorf("killed after %v, before the stop timeout %v", took, StopTimeout)
	}
	select {
	case <-p.Exited():
	default:
		t.Error("Stop returned before the exit")
	}
}

func TestStartProcessHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := StartProcess(ctx, "sh", []string{"sh", "-c", "exec sleep 60"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestKnowngood: the real binary, on free ports, healthy, with /stats,
// and a clean exit on SIGTERM.
func TestKnowngood(t *testing.T) {
	p := Start(t, "-variant", "echo-gorilla", "-shutdown-timeout", "3s")
	if !strings.HasPrefix(p.Addr, "127.0.0.1:") || strings.HasSuffix(p.Addr, ":0") || p.AdminAddr == p.Addr {
		t.Errorf("Addr %q, AdminAddr %q", p.Addr, p.AdminAddr)
	}
	before := p.Stats(t)
	if d := p.Settled(t, before); d.ConnectionsActive != 0 {
		t.Errorf("diff with nothing done: %+v", d)
	}
	if st, err := ReadStats(nil, p.AdminURL()); err != nil || st.ConnectionsActive != 0 {
		t.Errorf("ReadStats = %+v, %v", st, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.ExitErr(); err != nil {
		t.Errorf("exit: %v\n%s", err, p.Log())
	}
	if !strings.Contains(p.Log(), `"msg":"stopped"`) {
		t.Errorf("no stopped line:\n%s", p.Log())
	}
	if bin, err := Knowngood(); err != nil || bin != KnowngoodT(t) {
		t.Errorf("a second build: %q, %v", bin, err)
	}
}

func TestKnowngoodBadFlag(t *testing.T) {
	_, err := StartKnowngood(context.Background(), nil, "-variant", "nope")
	if err == nil || !strings.Contains(err.Error(), "invalid value for -variant") {
		t.Errorf("err = %v", err)
	}
}

// TestPrebuilt: with BinDirEnv set, a command found there by its package's
// name is used as it is; one under another name, or missing, is built.
func TestPrebuilt(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "gnetecho")
	if err := os.WriteFile(fake, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(BinDirEnv, dir)
	RemoveBuilds()
	t.Cleanup(RemoveBuilds)
	if bin, err := Floor("gnet"); err != nil || bin != fake {
		t.Errorf("Floor(gnet) = %q, %v; want %q", bin, err, fake)
	}
	if bin, ok := prebuilt("./scripts/bench/floors/sioserver", "sioserver"); ok {
		t.Errorf("prebuilt sioserver = %q, but %s has none", bin, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "sio-bare"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if bin, ok := prebuilt("./scripts/bench/floors/sioserver", "sio-bare"); ok {
		t.Errorf("prebuilt %q for a name that is not its package's", bin)
	}
}

// TestStartRedis: the redis-server StartRedis starts answers PING at its
// URL's address until Stop.
func TestStartRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip(redisserver.Missing)
	}
	p, url, err := StartRedis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0")
	if !redisserver.Answers(addr) {
		t.Errorf("no PONG from %s", url)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if redisserver.Answers(addr) {
		t.Errorf("%s still answers after Stop", url)
	}
}

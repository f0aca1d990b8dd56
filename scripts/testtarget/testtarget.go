// Package testtarget starts knowngood targets for the tests under docker/
// and scripts/recipes, which drive them with external tools: build the
// binary once, start a variant on free loopback ports, read /stats, stop it
// when the test ends.
package testtarget

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"knowngood/shared/protocol"
)

// Build compiles ./servers of the module at root into dir and returns the
// binary's path.
func Build(root, dir string) (string, error) {
	bin := filepath.Join(dir, "knowngood")
	cmd := exec.Command("go", "build", "-o", bin, "./servers")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./servers: %v\n%s", err, out)
	}
	return bin, nil
}

// Target is a running knowngood process.
type Target struct {
	Addr  string // 127.0.0.1:PORT of the target
	Admin string // http://127.0.0.1:PORT of the admin listener
	cmd   *exec.Cmd
	done  chan struct{}
	mu    sync.Mutex
	log   strings.Builder
}

// Start runs bin with -variant and args on free loopback ports, waits for
// its "listening" line (30 s at most) and stops it (SIGTERM, then SIGKILL
// after 10 s) when the test ends.
func Start(t testing.TB, bin, variant string, args ...string) *Target {
	t.Helper()
	args = append([]string{"-variant", variant, "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-log-format", "json"}, args...)
	tg := &Target{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	pipe, err := tg.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			tg.mu.Lock()
			tg.log.Write(append(sc.Bytes(), '\n'))
			tg.mu.Unlock()
			var line struct {
				Msg       string `json:"msg"`
				Addr      string `json:"addr"`
				AdminAddr string `json:"admin_addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				ready <- [2]string{line.Addr, line.AdminAddr}
			}
		}
		_ = tg.cmd.Wait()
		close(tg.done)
	}()
	t.Cleanup(tg.stop)
	select {
	case a := <-ready:
		tg.Addr, tg.Admin = a[0], "http://"+a[1]
	case <-tg.done:
		t.Fatalf("knowngood %v exited:\n%s", args, tg.Log())
	case <-time.After(30 * time.Second):
		t.Fatalf("knowngood %v did not say it listens within 30s:\n%s", args, tg.Log())
	}
	return tg
}

// Log is what the process wrote to stderr so far.
func (tg *Target) Log() string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.log.String()
}

func (tg *Target) stop() {
	_ = tg.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-tg.done:
	case <-time.After(10 * time.Second):
		_ = tg.cmd.Process.Kill()
		<-tg.done
	}
}

// Stats reads the target's /stats.
func (tg *Target) Stats(t testing.TB) protocol.Stats {
	t.Helper()
	s, err := GetStats(tg.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// GetStats reads /stats from the admin listener at admin (http://HOST:PORT).
func GetStats(admin string) (protocol.Stats, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(admin + "/stats")
	if err != nil {
		return protocol.Stats{}, err
	}
	defer resp.Body.Close()
	return protocol.DecodeStats(resp.Body)
}

// Settled is the /stats diff since before, read once the target has seen
// every connection of the run close (connections_active back to before's),
// or after 10 s: a tool may exit before the server has counted its last
// close.
func (tg *Target) Settled(t testing.TB, before protocol.Stats) protocol.Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := tg.Stats(t)
		if after.ConnectionsActive <= before.ConnectionsActive || time.Now().After(deadline) {
			return protocol.Diff(before, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Need skips a test whose external tool is missing, except in CI, where
// .ci/run has installed everything (make deps) and a missing tool is a
// failure.
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (%v); .ci/run should have installed it (make deps)", what, err)
	}
	t.Skipf("%s is missing (%v): run make deps", what, err)
}

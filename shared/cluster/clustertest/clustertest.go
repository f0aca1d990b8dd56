// Package clustertest starts a real redis-server for tests, on a free
// loopback port, and stops it (or restarts it on the same port, for the
// tests of a replica riding out a Redis that went away).
package clustertest

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/cluster/redisserver"
)

// Redis is one redis-server process.
type Redis struct {
	t    testing.TB
	Port int
	URL  string // redis://127.0.0.1:PORT/0
	cmd  *exec.Cmd
}

// StartRedis starts redis-server on a free port and stops it when the test
// ends. A machine without redis-server skips the test with the command that
// installs it (make deps does).
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip(redisserver.Missing)
	}
	r := &Redis{t: t, Port: freePort(t)}
	r.URL = fmt.Sprintf("redis://127.0.0.1:%d/0", r.Port)
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Addr is 127.0.0.1:PORT.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)) }

// Start starts the server (again) on its port and waits until it answers
// PING.
func (r *Redis) Start() {
	r.t.Helper()
	if r.cmd != nil {
		r.t.Fatal("clustertest: redis-server already running")
	}
	r.cmd = exec.Command("redis-server", redisserver.Args(r.Port)...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !redisserver.Answers(r.Addr()) {
		if time.Now().After(deadline) {
			r.Stop()
			r.t.Fatalf("clustertest: redis-server on %s did not answer PING within 10s", r.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (as a crash would: no shutdown, no goodbye to the
// clients) and waits for it to exit. Stopping a stopped server does nothing.
func (r *Redis) Stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before redis-server binds it; on a test machine that is rare and
// shows as a failed start, not a wrong result.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

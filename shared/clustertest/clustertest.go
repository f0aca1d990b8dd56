// Package clustertest starts a real redis-server for tests, on a free
// loopback port, and stops it (or restarts it on the same port, for the
// tests of a replica riding out a Redis that went away). FreePort serves
// the other servers a cluster's tests start, nginx in front of replicas.
package clustertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/procfs"
	"github.com/knowngood/knowngood/shared/redisserver"
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
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r := &Redis{t: t, Port: port}
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
	_ = r.cmd.Process.Kill() // a paused server dies too
	_ = r.cmd.Wait()
	r.cmd = nil
}

// FreePort is a loopback port that nothing listens on, for a server that
// another process binds a moment later (redis-server, nginx). It is chosen
// below the kernel's ephemeral range where there is room (from port 20000
// up, above the compose files' fixed ports): a port of that range, as a
// bind to port 0 gives, may meanwhile become the local port of any
// outgoing connection, and the server's bind then fails. It falls back to
// a port of the range when the range starts too low or /proc cannot say.
func FreePort() (int, error) {
	const floor = 20000
	if lo, _, err := procfs.LocalPortRange(); err == nil && lo > floor {
		for range 50 {
			port := floor + rand.IntN(lo-floor)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				ln.Close()
				return port, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

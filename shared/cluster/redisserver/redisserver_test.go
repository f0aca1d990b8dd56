package redisserver_test

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/cluster/redisserver"
	"github.com/knowngood/knowngood/shared/lifecycle/lifecycletest"
)

// TestArgsServeAndAnswer: a redis-server started with Args answers PING
// on its port, and a port nobody listens on does not.
func TestArgsServeAndAnswer(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip(redisserver.Missing)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if redisserver.Answers(addr) {
		t.Fatalf("%s answers PING before redis-server runs", addr)
	}
	cmd := exec.Command("redis-server", redisserver.Args(port)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lifecycletest.WaitUpTo(t, 10*time.Second, "redis-server answering PING on "+addr, func() bool { return redisserver.Answers(addr) })
}

// Package redisserver is what running a throwaway redis-server takes, for
// the tests (clustertest) and for the benchmarks and experiments
// (scripts/harness) alike: its flags and the PING that says it listens.
package redisserver

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"time"
)

// Missing is the error text when redis-server is not installed.
const Missing = "redis-server not installed (make deps, or apt-get install -y redis-server)"

// Args are redis-server's flags for a server on 127.0.0.1:port that
// saves nothing to disk, stays in the foreground and logs warnings only.
func Args(port int) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"}
}

// Answers sends PING to the Redis at addr and wants +PONG, within a
// second.
func Answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

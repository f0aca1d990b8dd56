package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"

	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/redisserver"
)

// StartRedis runs redis-server on a free loopback port (chosen as
// clustertest.FreePort says), with nothing saved to disk, and returns once it answers PING; URL gives redis://HOST:PORT/0.
// The caller stops it with Stop, like any Process. Another process may take
// the port between the probe and redis-server's bind: that shows as a
// failed start, never as a wrong result.
func StartRedis(ctx context.Context) (*Process, string, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, "", errors.New(redisserver.Missing)
	}
	port, err := clustertest.FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// redis-server prints no "listening" line of its own: the shell prints
	// one and execs it, so that the PID is redis-server's; PING below says
	// when it really listens.
	line := fmt.Sprintf(`{"msg":"listening","addr":"%s"}`, addr)
	script := "echo '" + line + "'; exec redis-server"
	for _, arg := range redisserver.Args(port) {
		script += " '" + arg + "'" // none has a quote of its own
	}
	p, err := StartProcess(ctx, "redis-server", []string{"sh", "-c", script})
	if err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(StartTimeout)
	for !redisserver.Answers(addr) {
		select {
		case <-p.Exited():
			return nil, "", fmt.Errorf("redis-server on %s exited: %s", addr, p.Tail())
		case <-ctx.Done():
			_ = p.Stop()
			return nil, "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.Stop()
			return nil, "", fmt.Errorf("redis-server on %s did not answer PING within %v: %s", addr, StartTimeout, p.Tail())
		}
	}
	return p, "redis://" + addr + "/0", nil
}

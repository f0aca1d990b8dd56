package redisserver_test

import (
	"testing"

	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/redisserver"
)

// TestArgsServeAndAnswer: a redis-server started with Args (clustertest
// starts it so) answers PING on its port, and no longer once stopped.
func TestArgsServeAndAnswer(t *testing.T) {
	srv := clustertest.StartRedis(t)
	if !redisserver.Answers(srv.Addr()) {
		t.Fatalf("no PONG from %s", srv.Addr())
	}
	srv.Stop()
	if redisserver.Answers(srv.Addr()) {
		t.Errorf("%s still answers after Stop", srv.Addr())
	}
}

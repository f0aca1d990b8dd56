package cluster

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// go-redis logs every failed dial of its pool itself, many lines a second
// while Redis is down. A replica says it once a second (Redis.Fail) and
// counts the rest, so go-redis's own log is silenced for the process.
func init() { redis.SetLogger(quiet{}) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is -shard I/N: this process runs the I-th of N shares of the
// scenario's clients (1-based), so that N loadgen processes, on one
// machine or several, together run what one would. The zero value is no
// sharding (the whole run).
type Shard struct {
	I int `json:"index"`
	N int `json:"count"`
}

// ShardUsage says how -shard splits a run, for -h.
const ShardUsage = "run shard `I/N` of the scenario (1 <= I <= N; I may be K+1 for a 0-based K, as a Kubernetes Indexed Job's $(JOB_COMPLETION_INDEX)+1) so that N loadgen processes, on one machine or several, together run what one would; 'loadgen merge' makes one report of their -json reports. The scenario's counts (-n, -c, -subscribers, -senders) and -rate are split so that the shards' add up to the whole: shard I gets total/N, plus one when I <= total mod N; broadcast senders are numbered after the shards before, so that each shard tells its own broadcasts from the others'"

// Set reports whether the run is sharded.
func (s Shard) Set() bool { return s.N > 0 }

func (s Shard) String() string {
	if !s.Set() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// ParseShard parses I/N, where I may also be written K+1 for a 0-based
// K: a Kubernetes Indexed Job numbers its pods from 0, and its manifests
// cannot add, so a pod's args say -shard $(JOB_COMPLETION_INDEX)+1/N.
// The error names the flag and the accepted form.
func ParseShard(value string) (Shard, error) {
	bad := fmt.Errorf("invalid value %q for flag -shard: want I/N, 1 <= I <= N (e.g. 2/3), or K+1/N for a 0-based K", value)
	i, n, ok := strings.Cut(value, "/")
	if !ok {
		return Shard{}, bad
	}
	k, plusOne := strings.CutSuffix(i, "+1")
	si, err1 := strconv.Atoi(k)
	sn, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || sn < 1 || sn > 1<<20 || si < 0 || si > sn {
		return Shard{}, bad
	}
	if plusOne {
		si++ // at most N+1: checked below
	}
	if si < 1 || si > sn {
		return Shard{}, bad
	}
	return Shard{I: si, N: sn}, nil
}

// Split is this shard's part of total: how many, and how many the shards
// before it have (the first of this shard's ids). Unsharded: all of them,
// from 0.
func (s Shard) Split(total int) (count, offset int) {
	if !s.Set() {
		return total, 0
	}
	base, extra := total/s.N, total%s.N
	count = base
	if s.I <= extra {
		count++
	}
	return count, (s.I-1)*base + min(s.I-1, extra)
}

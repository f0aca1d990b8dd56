package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/conns"
)

// The target's /stats gives the kernel's listen-queue counts of its whole
// network namespace: on a machine shared with other servers, another
// listener's overflows at the same moment count there too. The target's
// listener has a count of its own, its socket's drops, which ss -ltm
// shows (skmem ... d<drops>): tcp_listendrop adds each listen drop to
// both, but the socket's also counts the other packets it dropped (a few
// in a burst at a queue that never filled). So the overflows at the
// target are at most either: ownOverflows takes the smaller. The target
// cannot read its socket's drops itself with SO_MEMINFO: Go listens over
// MPTCP by default, and that socket's counters are not its TCP
// listener's; ss reads the TCP listener, by port, from the kernel's
// socket diagnostics.

// ssWait bounds one ss run.
const ssWait = 10 * time.Second

// listenerDrops is the drops of the TCP listeners on port, from ss.
func listenerDrops(ctx context.Context, port int) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, ssWait)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ss", "-ltnmH", fmt.Sprintf("sport = :%d", port)).Output()
	if err != nil {
		return 0, fmt.Errorf("ss (iproute2) for the listener's drops: %w", err)
	}
	return parseSkmemDrops(string(out))
}

// parseSkmemDrops adds up the d<drops> of every skmem:(...) in ss's
// output; an error when there is none (no listener on the port).
func parseSkmemDrops(out string) (uint64, error) {
	var total uint64
	found := false
	for rest := out; ; {
		i := strings.Index(rest, "skmem:(")
		if i < 0 {
			break
		}
		rest = rest[i+len("skmem:("):]
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return 0, errors.New("ss: an skmem without its end")
		}
		for f := range strings.SplitSeq(rest[:end], ",") {
			if n, err := strconv.ParseUint(strings.TrimPrefix(f, "d"), 10, 64); strings.HasPrefix(f, "d") && err == nil {
				total += n
				found = true
			}
		}
		rest = rest[end:]
	}
	if !found {
		return 0, errors.New("ss shows no listener with its drops (skmem d...) on the port")
	}
	return total, nil
}

// secondPlus counts the connects that took a second or more (one SYN
// retry at least, or a handshake held that long) and those that never
// got in: what the clients saw of the queue.
func secondPlus(rep *conns.Report) int {
	n := rep.Failed
	for _, b := range rep.ConnectHistogram {
		if b.UpToMicros >= int64(time.Second/time.Microsecond) {
			n += int(b.Count)
		}
	}
	return n
}

// ownOverflows bounds the overflows at the target's listener over a burst:
// the namespace's count, no more than the listener's own drops; -1 when
// those are unknown.
func ownOverflows(r row) int64 {
	if r.listenerDrops < 0 {
		return -1
	}
	return min(r.listenerDrops, int64(r.overflows))
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// The report waited 60 s between runs for TIME_WAIT to clear: a closed
// connection's 4-tuple stays in TIME_WAIT for 60 s on Linux, and a burst
// of C connects needs C free ones. Here each run's target listens on a
// fresh port, so the last run's TIME_WAIT sockets share no 4-tuple with
// the next run's; the wait is kept, on the event, so that the runs start
// alike (the kernel's TIME_WAIT buckets are bounded too, and a run that
// starts among thousands of them is not the report's).

// tcpTimeWait is the state of a TIME_WAIT socket in /proc/net/tcp.
const tcpTimeWait = "06"

// procNetTCP are the tables of the TCP sockets of this network namespace.
var procNetTCP = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// countTimeWait counts the TIME_WAIT sockets with port at either end: the
// client's (the side that closed first) and the server's.
func countTimeWait(port int) (int, error) {
	n := 0
	for _, name := range procNetTCP {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return 0, err
		}
		c, err := timeWaitIn(f, port)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		n += c
	}
	return n, nil
}

// maxProcLines bounds a /proc/net/tcp read: a table is a line a socket.
const maxProcLines = 10000000

// timeWaitIn counts the TIME_WAIT lines of a /proc/net/tcp table with port
// as the local or the remote port ("0100007F:1F90" is 127.0.0.1:8080).
func timeWaitIn(r io.Reader, port int) (int, error) {
	sc := bufio.NewScanner(r)
	n := 0
	for line := 0; sc.Scan() && line < maxProcLines; line++ {
		f := strings.Fields(sc.Text())
		if line == 0 || len(f) < 4 || f[3] != tcpTimeWait {
			continue // the header, or another state
		}
		if portOf(f[1]) == port || portOf(f[2]) == port {
			n++
		}
	}
	return n, sc.Err()
}

// portOf reads the port of an ADDRESS:PORT in hex; -1 when malformed.
func portOf(s string) int {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseUint(s[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(p)
}

// timeWaitPoll spaces the reads of the tables.
const timeWaitPoll = 250 * time.Millisecond

// awaitTimeWait waits, up to bound, until no TIME_WAIT socket has port at
// either end; it returns how long it waited and how many were left.
func awaitTimeWait(ctx context.Context, port int, bound time.Duration) (time.Duration, int, error) {
	start := time.Now()
	deadline := start.Add(bound)
	for {
		n, err := countTimeWait(port)
		if err != nil || n == 0 || !time.Now().Before(deadline) {
			return time.Since(start), n, err
		}
		select {
		case <-ctx.Done():
			return time.Since(start), n, ctx.Err()
		case <-time.After(min(timeWaitPoll, time.Until(deadline))):
		}
	}
}

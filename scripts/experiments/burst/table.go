package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/conns"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/procfs"
)

// reported are the report's figures at backlog 16,384, by C: requests a
// second, mean and p99 in ms; 100 % success each.
var reported = map[int]struct{ rate, mean, p99 float64 }{
	5000:  {81524, 60.8, 295},
	6000:  {56290, 98.5, 557},
	8000:  {30537, 165, 1058},
	10000: {24198, 241, 1602},
}

// somaxconnNow reads net.core.somaxconn, which caps every backlog.
func somaxconnNow() (int, error) {
	n, err := procfs.SysctlInt("net.core.somaxconn")
	if err != nil {
		return 0, fmt.Errorf("net.core.somaxconn: %w", err)
	}
	return n, nil
}

// writeTable writes the header lines (somaxconn and what it caps, each
// backlog's limit from /stats) and the table.
func writeTable(w io.Writer, o options, somaxconn int, rows []row) {
	fmt.Fprintf(w, "net.core.somaxconn is %d.\n", somaxconn)
	for _, b := range o.backlogs {
		limit := limitOf(rows, b)
		switch {
		case b > somaxconn:
			fmt.Fprintf(w, "backlog %d asked, %d in effect: net.core.somaxconn caps it; raise it with sudo sysctl -w net.core.somaxconn=%d or scripts/tune-host.sh (the target's /stats gives an accept-queue limit of %s).\n",
				b, somaxconn, b, limitText(limit))
		default:
			fmt.Fprintf(w, "backlog %d asked and in effect (the target's /stats gives an accept-queue limit of %s).\n", b, limitText(limit))
		}
	}
	busyText := "no steady traffic (-rate 0): an idle target"
	if o.rate > 0 {
		busyText = fmt.Sprintf("steady traffic of %d msg/s over %d connections (loadgen echo -mode rate, %d bytes) during each burst", o.rate, o.rateConns, o.echo)
	}
	fmt.Fprintf(w, "Target %s, fresh for each run, with %s; each connect's deadline %s. The shapes: echo, a WebSocket upgrade and one %d-byte message echoed, inside the connect's time; get, one plain HTTP GET per TCP connection, answered 426 by the WebSocket target on the same listener.\n",
		o.variant, busyText, o.timeout, o.echo)
	fmt.Fprintf(w, "%s\n", timeWaitLine(o, rows))
	fmt.Fprintln(w, "Overflows and drops: the kernel's TcpExt ListenOverflows and ListenDrops over the burst, from the target's /stats, counted for the whole network namespace (another program's listener adds to them). Listener drops: the packets the kernel dropped at the target's own listener (ss -ltm, skmem d; its listen drops and a few others). At the target: the overflows, at most the listener's drops, the kernel's count for this target alone. A dropped connect's SYN or handshake is retried after 1 s, 3 s, 7 s...: clients >= 1 s counts the connects that took a second or more, and those that never got in, what the clients saw of the queue.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| shape | C | backlog | in effect | connects/s | mean ms | p50 ms | p99 ms | max ms | success % | report: req/s, mean, p99 (backlog 16384) | at the target | clients >= 1 s | overflows | drops | listener drops | steady msgs | loadgen's verdict |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		rep := "-"
		if f, ok := reported[r.c]; ok {
			rep = fmt.Sprintf("%.0f, %.1f, %.0f", f.rate, f.mean, f.p99)
		}
		if r.err != nil {
			fmt.Fprintf(w, "| %s | %d | %d | %s | - | - | - | - | - | - | %s | - | - | - | - | - | - | run failed: %s |\n", r.shape, r.c, r.backlog, limitText(r.limit), rep, benchrun.Cell(r.err.Error()))
			continue
		}
		c := r.rep.Connect
		mean, p50, p99, most := "-", "-", "-", "-"
		if c != nil {
			mean, p50, p99, most = fmt.Sprintf("%.1f", c.Mean), fmt.Sprintf("%.1f", c.P50), fmt.Sprintf("%.0f", c.P99), fmt.Sprintf("%.0f", c.Max)
		}
		success := 100 * float64(r.rep.Established) / float64(r.c)
		own, listener := fmt.Sprint(ownOverflows(r)), fmt.Sprint(r.listenerDrops)
		if r.listenerError != nil {
			own, listener = "unknown", "unknown: "+benchrun.Cell(r.listenerError.Error())
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %.0f | %s | %s | %s | %s | %.1f | %s | %s | %d | %d | %d | %s | %d | %s |\n",
			r.shape, r.c, r.backlog, limitText(r.limit), r.rep.ConnectsPerSecond, mean, p50, p99, most, success, rep,
			own, secondPlus(r.rep), r.overflows, r.drops, listener, r.busy, benchrun.Cell(verdictLine(verdictsOf(r.rep))))
	}
}

// limitOf is the accept-queue limit /stats gave for backlog b; -1 unknown.
func limitOf(rows []row, b int) int {
	for _, r := range rows {
		if r.backlog == b && r.limit >= 0 {
			return r.limit
		}
	}
	return -1
}

func limitText(limit int) string {
	if limit < 0 {
		return "unknown"
	}
	return fmt.Sprint(limit)
}

// finding is one of loadgen's verdicts.
type finding struct{ kind, text string }

// Kinds of loadgen's verdicts on the listen queue.
const (
	kindListenQueue  = "listen-queue"  // connects dropped there, in later by SYN retries
	kindNeverReached = "never-reached" // connects that never got in
)

// verdictsOf are rep's verdicts.
func verdictsOf(rep *conns.Report) []finding {
	var out []finding
	for _, v := range rep.Verdicts {
		out = append(out, finding{v.Kind, v.Text})
	}
	return out
}

// namesListenQueue reports whether loadgen's verdicts put connects at the
// listen queue.
func namesListenQueue(vs []finding) bool {
	for _, v := range vs {
		if (v.kind == kindListenQueue || v.kind == kindNeverReached) && strings.Contains(v.text, "at the listen queue") {
			return true
		}
	}
	return false
}

// verdictLine is loadgen's verdict on the listen queue when it gave one
// (the connects that never got in, or those the queue delayed), else its
// first: the kinds of the others follow.
func verdictLine(vs []finding) string {
	if len(vs) == 0 {
		return "-"
	}
	pick := 0
	for i, v := range vs {
		if v.kind == kindListenQueue || v.kind == kindNeverReached {
			pick = i
			break
		}
	}
	var others []string
	for i, v := range vs {
		if i != pick {
			others = append(others, v.kind)
		}
	}
	line := vs[pick].kind + ": " + vs[pick].text
	if len(others) > 0 {
		line += " (also: " + strings.Join(others, ", ") + ")"
	}
	return line
}

// timeWaitLine says how the runs were kept apart.
func timeWaitLine(o options, rows []row) string {
	if o.timeWait == 0 {
		return "No wait for TIME_WAIT between runs (-time-wait 0): each run's target listens on a fresh port, so the last run's TIME_WAIT sockets share no 4-tuple with the next run's."
	}
	var waits []string
	for _, r := range rows {
		s := r.waited.Round(100 * time.Millisecond).String()
		switch {
		case r.timeWaitError != nil:
			s += " (" + r.timeWaitError.Error() + ")"
		case r.timeWaitLeft > 0:
			s += fmt.Sprintf(" (%d left)", r.timeWaitLeft)
		}
		waits = append(waits, s)
	}
	return fmt.Sprintf("After each run, a wait until no TIME_WAIT socket had the target's port at either end (/proc/net/tcp, tcp6), up to -time-wait %s, as the report waited 60 s; each run's target also listens on a fresh port. Waited: %s.",
		o.timeWait, strings.Join(waits, ", "))
}

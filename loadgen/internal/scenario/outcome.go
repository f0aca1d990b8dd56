package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/threshold"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
)

// Exit statuses of loadgen's scenarios and watch.
const (
	ExitPass        = 0   // the run took place and nothing failed it
	ExitFail        = 1   // the run failed, or could not take place
	ExitUsage       = 2   // bad flags
	ExitUnreachable = 3   // the target could not be reached
	ExitInterrupted = 130 // interrupted: the report is partial
)

// ErrUnreachable marks a run error that means the target could not be
// reached (loadgen watch: no /stats before the command); the exit status
// is then ExitUnreachable.
var ErrUnreachable = errors.New("could not reach the target")

// Outcome is what a report says of its run, for the exit status.
type Outcome struct {
	// Attempts are the connections the run tried and Connected those
	// that were established. None of several: the run failed, and when
	// the target's address does not take a TCP connection either
	// (refused, no such host, no route, no answer), it could not be
	// reached.
	Attempts, Connected int
	// Nothing: "" when something succeeded; else what did not (e.g. "no
	// message was echoed"), which fails the run.
	Nothing string
	// Verdicts: one that finds a loss, on either side, fails the run.
	Verdicts []verdict.Verdict
	// Metrics are the values that -threshold reads.
	Metrics threshold.Values
}

// Connections is the outcome of a run that tried attempts connections and
// established ok of them; failed are those it counts as not established.
// Its metrics hold the values of threshold.Connected's (success, ok,
// failed) and client_cpu (clientCPU seconds), to which the scenario adds
// its own.
func Connections(attempts, ok, failed int, clientCPU float64, verdicts []verdict.Verdict) Outcome {
	v := threshold.Values{"ok": float64(ok), "failed": float64(failed), "client_cpu": clientCPU}
	v.Share("success", float64(ok), float64(attempts))
	return Outcome{Attempts: attempts, Connected: ok, Verdicts: verdicts, Metrics: v}
}

// Judged is a report whose run passes or fails: every scenario's, and
// watch's.
type Judged interface {
	Outcome() Outcome
	// SetThresholds records the thresholds' outcomes in the report, for
	// -json.
	SetThresholds([]threshold.Result)
}

// Checks, embedded in a report, carries the thresholds' outcomes in its
// JSON.
type Checks struct {
	Thresholds []threshold.Result `json:"thresholds,omitempty"`
}

// SetThresholds records rs.
func (c *Checks) SetThresholds(rs []threshold.Result) { c.Thresholds = rs }

// ProbeTimeout bounds the dial that tells an unreachable target from one
// that took no connection of the run.
const ProbeTimeout = 3 * time.Second

// judge evaluates cfg's thresholds against rep, when rep is Judged, and
// records them in it; the results are printed after the table.
func judge(cfg any, rep any) (Outcome, []threshold.Result, bool) {
	j, ok := rep.(Judged)
	if !ok {
		return Outcome{}, nil, false
	}
	out := j.Outcome()
	var ts []threshold.Threshold
	if c, ok := cfg.(interface{ ThresholdList() []threshold.Threshold }); ok {
		ts = c.ThresholdList()
	}
	if len(ts) == 0 {
		return out, nil, true
	}
	rs := threshold.Evaluate(ts, out.Metrics)
	j.SetThresholds(rs)
	return out, rs, true
}

// verdictOf is the exit status of a judged run, and says why it failed on
// stderr as one line.
func verdictOf(ctx context.Context, name string, cfg any, out Outcome, rs []threshold.Result, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "loadgen %s: failed: %s\n", name, fmt.Sprintf(format, args...))
		return ExitFail
	}
	if out.Attempts > 0 && out.Connected == 0 {
		if c, ok := cfg.(interface{ TargetURL() string }); ok {
			if err := probe(ctx, c.TargetURL()); err != nil {
				fmt.Fprintf(stderr, "loadgen %s: %v: %v\n", name, ErrUnreachable, err)
				return ExitUnreachable
			}
		}
		return fail("none of the %d connections was established", out.Attempts)
	}
	if out.Nothing != "" {
		return fail("%s", out.Nothing)
	}
	if lost := lossOf(out.Verdicts); lost != "" {
		return fail("the verdicts found a loss: %s", lost)
	}
	if n := crossed(rs); n > 0 {
		return fail("%d of %d thresholds crossed", n, len(rs))
	}
	return ExitPass
}

// lossOf is the first verdict that found a loss, its kind; "" for none.
func lossOf(vs []verdict.Verdict) string {
	for _, v := range vs {
		if v.Loss {
			return v.Kind
		}
	}
	return ""
}

func crossed(rs []threshold.Result) int {
	n := 0
	for _, r := range rs {
		if !r.OK {
			n++
		}
	}
	return n
}

// probe dials the target's address once: nil when it takes a TCP
// connection; else the dial's error (connection refused, no such host, no
// route, no answer within ProbeTimeout).
func probe(ctx context.Context, raw string) error {
	addr, err := hostPort(raw)
	if err != nil {
		return err
	}
	d := net.Dialer{Timeout: ProbeTimeout}
	c, err := d.DialContext(context.WithoutCancel(ctx), "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// hostPort is the address of a target URL, the scheme's port when it
// names none.
func hostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("no host in %q", raw)
	}
	if port := u.Port(); port != "" {
		return net.JoinHostPort(u.Hostname(), port), nil
	}
	switch u.Scheme {
	case "https", "wss", "tls":
		return net.JoinHostPort(u.Hostname(), "443"), nil
	}
	return net.JoinHostPort(u.Hostname(), "80"), nil
}

package benchrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
)

// LoadgenReport runs cmd, a loadgen scenario with -json -, and decodes the
// report it prints into an R. A run that failed its thresholds or verdicts
// but printed its report still gives the report.
func LoadgenReport[R any](cmd *exec.Cmd) (*R, error) {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run() // before out.Bytes(), which it fills
	rep, err := DecodeLoadgen[R](out.Bytes(), runErr)
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, LastLine(errOut.String()))
	}
	return rep, nil
}

// DecodeLoadgen decodes the report a loadgen run with -json - printed
// (out), given how the run ended (runErr): for runs started some other
// way than LoadgenReport's, several at once, say.
func DecodeLoadgen[R any](out []byte, runErr error) (*R, error) {
	if err := harness.LoadgenRan(runErr, out); err != nil {
		return nil, fmt.Errorf("loadgen: %v", err)
	}
	var rep R
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, fmt.Errorf("loadgen output: %v", err)
	}
	return &rep, nil
}

// Sleep waits d, or until ctx is done (its error then).
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Procs stops every process added, in reverse order. Stop has a pointer
// receiver so that `defer procs.Stop()`, evaluated while procs is still
// empty, stops what was added after it.
type Procs []*harness.Process

// Add is p, to stop with the rest.
func (s *Procs) Add(p *harness.Process) { *s = append(*s, p) }

// Stop stops them, the last added first.
func (s *Procs) Stop() {
	for i := len(*s) - 1; i >= 0; i-- {
		_ = (*s)[i].Stop()
	}
}

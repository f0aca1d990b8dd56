package harness

import (
	"bytes"
	"errors"
	"os/exec"
)

// LoadgenFailed is the exit status of a loadgen run that took place and
// wrote its report, but failed its pass/fail criteria: nothing succeeded,
// a verdict found a loss, or a -threshold was crossed.
const LoadgenFailed = 1

// LoadgenRan is err, the error of a loadgen run that wrote stdout, unless
// the run took place and only failed its pass/fail criteria (exit status
// LoadgenFailed with a report on stdout): then nil, for a caller that
// reads the report and judges the run itself (a benchmark that measures a
// target past its limits, a test that expects loss).
func LoadgenRan(err error, stdout []byte) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == LoadgenFailed && len(bytes.TrimSpace(stdout)) > 0 {
		return nil
	}
	return err
}

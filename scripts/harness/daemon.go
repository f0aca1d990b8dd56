package harness

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// StopAtCleanup stops cmd, a daemon the test has started, when the test
// ends: sig, then SIGKILL if it has not exited within grace, which fails
// the test (a daemon that ignores its stop signal would outlive a run).
// The channel is closed once cmd has exited; cmd.Wait is called for it,
// and cleanups the test registers before this one run after the exit.
func StopAtCleanup(t testing.TB, cmd *exec.Cmd, sig os.Signal, grace time.Duration) <-chan struct{} {
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(sig)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-exited:
		case <-timer.C:
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("%s did not stop within %v of %v; killed", cmd.Path, grace, sig)
		}
	})
	return exited
}

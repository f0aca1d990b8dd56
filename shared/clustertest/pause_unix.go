//go:build unix

package clustertest

import (
	"os"
	"syscall"
)

// Pause stops the server where it is (SIGSTOP), as a Redis stalled by
// its host or a long fork would be: connections stay open, and what
// clients write waits in its socket buffers, to be run once it resumes.
func (r *Redis) Pause() { r.signal(syscall.SIGSTOP) }

// Resume lets a paused server go on (SIGCONT).
func (r *Redis) Resume() { r.signal(syscall.SIGCONT) }

func (r *Redis) signal(sig os.Signal) {
	r.t.Helper()
	if r.cmd == nil {
		r.t.Fatal("clustertest: redis-server not running")
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatal(err)
	}
}

//go:build !unix

package clustertest

// Pause skips the test: a process cannot be stopped where it is without
// SIGSTOP.
func (r *Redis) Pause() { r.t.Skip("clustertest: pausing redis-server needs SIGSTOP (unix)") }

// Resume does nothing where Pause skips.
func (r *Redis) Resume() {}

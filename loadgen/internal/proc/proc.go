// Package proc reads process figures for the load scenarios: this process's
// CPU time (getrusage) and open-files limit, and another process's CPU time
// and resident memory from /proc (Linux, through shared/procfs), for a
// target that has no /stats.
package proc

import "github.com/knowngood/knowngood/shared/procfs"

// CPUSeconds is the user+system CPU time of process pid so far, from
// /proc/PID/stat.
func CPUSeconds(pid int) (float64, error) { return procfs.CPUSeconds(pid) }

// ResidentBytes is the resident memory of process pid (VmRSS in
// /proc/PID/status), the figure that a Go target's /stats reports as
// resident_bytes.
func ResidentBytes(pid int) (float64, error) { return procfs.ResidentBytes(pid) }

//go:build unix

package proc

import "syscall"

// SelfCPUSeconds is the user+system CPU time of this process so far.
func SelfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return sec(ru.Utime) + sec(ru.Stime)
}

// OpenFiles reads RLIMIT_NOFILE, raising the soft limit to the hard one
// when it is lower (the Go runtime usually has already; a refusal leaves the
// soft limit as it was), and counts the descriptors open.
func OpenFiles() (Files, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return Files{}, err
	}
	f := Files{Soft: lim.Cur, Hard: lim.Max}
	if lim.Cur < lim.Max {
		raised := syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			f.RaisedFrom, f.Soft = lim.Cur, lim.Max
		}
	}
	f.Open = openFiles()
	return f, nil
}

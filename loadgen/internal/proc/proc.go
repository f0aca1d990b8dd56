// Package proc reads process figures for the load scenarios: this process's
// CPU time (getrusage) and open-files limit, and another process's CPU time
// and resident memory from /proc (Linux), for a target that has no /stats.
package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat; it
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPUSeconds is the user+system CPU time of process pid so far, from
// /proc/PID/stat.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return float64(ut+st) / clockTicks, nil
}

// ResidentBytes is the resident memory of process pid (VmRSS in
// /proc/PID/status), the figure that a Go target's /stats reports as
// resident_bytes.
func ResidentBytes(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		n, err := strconv.ParseUint(kb, 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, rest)
		}
		return float64(n) * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS (a kernel thread, or not Linux)", pid)
}

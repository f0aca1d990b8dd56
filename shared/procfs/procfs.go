// Package procfs reads the figures of a process and of the kernel that the
// servers, the load client, the benchmarks and the tests need from Linux's
// /proc: CPU time, resident memory and thread count (/proc/PID/stat and
// status), open descriptors and their limit (/proc/PID/fd and limits), mount
// points (/proc/PID/mounts) and integer sysctls (/proc/sys). Elsewhere every
// reader returns an error.
package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Self names this process in place of a PID.
const Self = 0

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat; it
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// path is /proc/PID/name, or /proc/self/name for Self.
func path(pid int, name string) string {
	if pid == Self {
		return "/proc/self/" + name
	}
	return fmt.Sprintf("/proc/%d/%s", pid, name)
}

// Stat holds the fields of /proc/PID/stat that are read here.
type Stat struct {
	UserTicks, SystemTicks uint64 // utime and stime, in USER_HZ ticks
	Threads                int    // num_threads
	RSSPages               uint64 // rss, in pages
}

// CPUSeconds is user plus system time.
func (s Stat) CPUSeconds() float64 {
	return float64(s.UserTicks+s.SystemTicks) / clockTicks
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	p := path(pid, "stat")
	b, err := os.ReadFile(p)
	if err != nil {
		return Stat{}, err
	}
	s, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: %w", p, err)
	}
	return s, nil
}

// ParseStat parses the text of a /proc/PID/stat file.
func ParseStat(b []byte) (Stat, error) {
	// The fields after the command name, which is in parentheses and may
	// hold spaces and parentheses itself: it ends at the last ')'. From
	// there state is the 1st field, utime and stime the 12th and 13th,
	// num_threads the 18th and rss the 22nd.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, errors.New("no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22 {
		return Stat{}, fmt.Errorf("%d fields after the command name, want 22 or more", len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	threads, err3 := strconv.Atoi(f[17])
	rss, err4 := strconv.ParseUint(f[21], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Stat{}, err
	}
	return Stat{UserTicks: ut, SystemTicks: st, Threads: threads, RSSPages: rss}, nil
}

// CPUSeconds is the user+system CPU time of process pid so far.
func CPUSeconds(pid int) (float64, error) {
	s, err := ReadStat(pid)
	return s.CPUSeconds(), err
}

// ResidentBytes is the resident memory of process pid (VmRSS in
// /proc/PID/status), the figure that a Go target's /stats reports as
// resident_bytes.
func ResidentBytes(pid int) (float64, error) {
	p := path(pid, "status")
	f, err := os.Open(p)
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
			return 0, fmt.Errorf("%s: VmRSS %q", p, rest)
		}
		return float64(n) * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no VmRSS (a kernel thread, or not Linux)", p)
}

// OpenFileCount is the number of descriptors process pid has open. For
// Self it leaves out the one that reading the directory itself holds.
func OpenFileCount(pid int) (int, error) {
	entries, err := os.ReadDir(path(pid, "fd"))
	if err != nil {
		return 0, err
	}
	if pid == Self {
		return len(entries) - 1, nil
	}
	return len(entries), nil
}

// Unlimited stands for "unlimited" in /proc/PID/limits.
const Unlimited = 1 << 30

// OpenFilesSoft is process pid's soft open-files limit (Max open files in
// /proc/PID/limits), Unlimited when it has none.
func OpenFilesSoft(pid int) (int, error) {
	soft, _, err := OpenFilesLimits(pid)
	return soft, err
}

// OpenFilesLimits is process pid's soft and hard open-files limits (the
// Max open files line of /proc/PID/limits), each Unlimited when it has
// none. Reading /proc rather than calling getrlimit keeps the tools that
// size themselves by it building on every platform; elsewhere they say at
// run time that the limit is unknown.
func OpenFilesLimits(pid int) (soft, hard int, err error) {
	p := path(pid, "limits")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Max open files")
		f := strings.Fields(rest)
		if !ok || len(f) < 2 {
			continue
		}
		if soft, err = limitValue(f[0]); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", p, err)
		}
		if hard, err = limitValue(f[1]); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", p, err)
		}
		return soft, hard, nil
	}
	return 0, 0, fmt.Errorf("%s: no Max open files", p)
}

// limitValue reads one column of /proc/PID/limits.
func limitValue(s string) (int, error) {
	if s == "unlimited" {
		return Unlimited, nil
	}
	return strconv.Atoi(s)
}

// MountPoints lists where things are mounted in process pid's mount
// namespace, in the order of /proc/PID/mounts (parents before children).
func MountPoints(pid int) ([]string, error) {
	b, err := os.ReadFile(path(pid, "mounts"))
	if err != nil {
		return nil, err
	}
	var points []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			points = append(points, f[1])
		}
	}
	return points, nil
}

// SysctlInt reads an integer sysctl by its dotted name (net.core.somaxconn)
// from /proc/sys.
func SysctlInt(name string) (int, error) {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// LocalPortRange is net.ipv4.ip_local_port_range: the ports the kernel
// gives outgoing connections and binds to port 0, from lo to hi.
func LocalPortRange() (lo, hi int, err error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, err
	}
	return parsePortRange(string(b))
}

func parsePortRange(s string) (lo, hi int, err error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("ip_local_port_range %q: want two ports", s)
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err := errors.Join(err1, err2); err != nil || lo > hi {
		return 0, 0, fmt.Errorf("ip_local_port_range %q: want two ports, the lower first", s)
	}
	return lo, hi, nil
}

// PIDFiles reads the process ids listed in pid files (a daemon's -pidfile,
// or a list of its workers), any number a file, separated by white space.
// A file that cannot be read, as one whose daemon has not written it yet,
// and a word that is not a number are passed over.
func PIDFiles(files ...string) []int {
	var pids []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(w); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// ListenQueue is what the kernel counted of the connects it turned away at
// listen queues (TcpExt in /proc/net/netstat): ListenOverflows, a
// handshake completed when its listener's accept queue was full, and
// ListenDrops, every connect dropped at a listener for any reason (the
// overflows among them). They count for the whole network namespace of
// the reader, every listener in it, since the namespace began: not per
// socket, and not per process.
type ListenQueue struct {
	Overflows, Drops uint64
}

// ReadListenQueue reads the namespace's ListenQueue counts.
func ReadListenQueue() (ListenQueue, error) {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return ListenQueue{}, err
	}
	return ParseListenQueue(b)
}

// ParseListenQueue reads ListenOverflows and ListenDrops from the text of
// /proc/net/netstat, whose TcpExt section is a line of names and a line of
// values.
func ParseListenQueue(b []byte) (ListenQueue, error) {
	var names []string
	for line := range strings.Lines(string(b)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "TcpExt:" {
			continue
		}
		if names == nil {
			names = fields[1:]
			continue
		}
		values := fields[1:]
		if len(values) != len(names) {
			return ListenQueue{}, fmt.Errorf("netstat: TcpExt has %d names and %d values", len(names), len(values))
		}
		var q ListenQueue
		found := 0
		for i, name := range names {
			var into *uint64
			switch name {
			case "ListenOverflows":
				into = &q.Overflows
			case "ListenDrops":
				into = &q.Drops
			default:
				continue
			}
			v, err := strconv.ParseUint(values[i], 10, 64)
			if err != nil {
				return ListenQueue{}, fmt.Errorf("netstat: TcpExt %s %q: %w", name, values[i], err)
			}
			*into = v
			found++
		}
		if found != 2 {
			return ListenQueue{}, errors.New("netstat: TcpExt has no ListenOverflows and ListenDrops")
		}
		return q, nil
	}
	return ListenQueue{}, errors.New("netstat: no TcpExt section")
}

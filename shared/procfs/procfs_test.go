//go:build unix

package procfs

import (
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

func needProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
}

func TestParseStat(t *testing.T) {
	// A command name with a space and a ')' in it, as a process may choose.
	line := "4242 (we) ird) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 31 0 0 20 0 7 0 12345 1000000 812 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	s, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{UserTicks: 250, SystemTicks: 31, Threads: 7, RSSPages: 812}
	if s != want {
		t.Errorf("ParseStat = %+v, want %+v", s, want)
	}
	if got := s.CPUSeconds(); got != 2.81 {
		t.Errorf("CPUSeconds = %v, want 2.81", got)
	}
	for _, bad := range []string{"", "4242 no name", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 many 31 0 0 20 0 7 0 12345 1000000 812"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}

func TestReadStatSelf(t *testing.T) {
	needProc(t)
	// Enough CPU time for /proc to see: it counts in 10 ms ticks. Bounded
	// in time for a machine that gives this process no CPU at all.
	sink := 0
	for begin := time.Now(); selfCPU() < 0.05 && time.Since(begin) < 5*time.Second; {
		for i := range 1_000_000 {
			sink += i * i
		}
	}
	_ = sink
	for _, pid := range []int{Self, os.Getpid()} {
		s, err := ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if cpu := s.CPUSeconds(); cpu <= 0 || cpu > selfCPU()+0.02 {
			t.Errorf("pid %d: CPU %v s; getrusage says %v", pid, cpu, selfCPU())
		}
		// The Go runtime runs a few threads of its own.
		if s.Threads < 1 || s.Threads > runtime.NumCPU()+100 {
			t.Errorf("pid %d: %d threads", pid, s.Threads)
		}
		if s.RSSPages*uint64(os.Getpagesize()) < 1<<20 {
			t.Errorf("pid %d: RSS %d pages", pid, s.RSSPages)
		}
	}
	if _, err := ReadStat(1 << 30); err == nil {
		t.Error("ReadStat of no process: no error")
	}
	if _, err := CPUSeconds(1 << 30); err == nil {
		t.Error("CPUSeconds of no process: no error")
	}
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return sec(ru.Utime) + sec(ru.Stime)
}

func TestResidentBytes(t *testing.T) {
	needProc(t)
	rss, err := ResidentBytes(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Errorf("ResidentBytes = %v, %v", rss, err)
	}
	if _, err := ResidentBytes(1 << 30); err == nil {
		t.Error("ResidentBytes of no process: no error")
	}
}

func TestOpenFiles(t *testing.T) {
	needProc(t)
	before, err := OpenFileCount(Self)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := OpenFileCount(Self); err != nil || n != before+1 {
		t.Errorf("with one more file open: %d, %v; want %d", n, err, before+1)
	}
	if n, err := OpenFileCount(os.Getpid()); err != nil || n < before+1 {
		t.Errorf("OpenFileCount(own pid) = %d, %v; want at least %d", n, err, before+1)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	soft, err := OpenFilesSoft(Self)
	if err != nil || uint64(soft) != lim.Cur && soft != Unlimited {
		t.Errorf("OpenFilesSoft = %d, %v; getrlimit says %d", soft, err, lim.Cur)
	}
	soft, hard, err := OpenFilesLimits(Self)
	if err != nil || uint64(soft) != lim.Cur && soft != Unlimited || uint64(hard) != lim.Max && hard != Unlimited {
		t.Errorf("OpenFilesLimits = %d, %d, %v; getrlimit says %d, %d", soft, hard, err, lim.Cur, lim.Max)
	}
	if _, err := OpenFileCount(1 << 30); err == nil {
		t.Error("OpenFileCount of no process: no error")
	}
}

func TestMountPoints(t *testing.T) {
	needProc(t)
	points, err := MountPoints(Self)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(points, "/") {
		t.Errorf("no / among %v", points)
	}
}

func TestSysctlInt(t *testing.T) {
	if _, err := os.Stat("/proc/sys/net/core/somaxconn"); err != nil {
		t.Skip(err)
	}
	if n, err := SysctlInt("net.core.somaxconn"); err != nil || n < 1 {
		t.Errorf("net.core.somaxconn = %d, %v", n, err)
	}
	if _, err := SysctlInt("no.such.sysctl"); err == nil {
		t.Error("no.such.sysctl: no error")
	}
}

func TestParsePortRange(t *testing.T) {
	for _, c := range []struct {
		in     string
		lo, hi int
		ok     bool
	}{
		{"32768\t60999\n", 32768, 60999, true},
		{"1024 65535", 1024, 65535, true},
		{"60999 32768", 0, 0, false},
		{"32768", 0, 0, false},
		{"a b", 0, 0, false},
	} {
		lo, hi, err := parsePortRange(c.in)
		if (err == nil) != c.ok || lo != c.lo || hi != c.hi {
			t.Errorf("parsePortRange(%q) = %d, %d, %v; want %d, %d, ok %v", c.in, lo, hi, err, c.lo, c.hi, c.ok)
		}
	}
}

func TestLocalPortRange(t *testing.T) {
	needProc(t)
	lo, hi, err := LocalPortRange()
	if err != nil || lo < 1 || hi > 65535 || lo > hi {
		t.Fatalf("LocalPortRange() = %d, %d, %v", lo, hi, err)
	}
}

func TestPIDFiles(t *testing.T) {
	dir := t.TempDir()
	one, workers := dir+"/nginx.pid", dir+"/workers"
	if err := os.WriteFile(one, []byte("12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(workers, []byte("13 14\n15\nnot-a-pid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := PIDFiles(one, dir+"/missing.pid", workers); !slices.Equal(got, []int{12, 13, 14, 15}) {
		t.Errorf("PIDFiles: %v, want [12 13 14 15]", got)
	}
}

func TestParseListenQueue(t *testing.T) {
	netstat := "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPHPHits\nTcpExt: 0 1184 1190 7\nIpExt: InNoRoutes\nIpExt: 0\n"
	if q, err := ParseListenQueue([]byte(netstat)); err != nil || q != (ListenQueue{Overflows: 1184, Drops: 1190}) {
		t.Errorf("ParseListenQueue: %+v, %v; want 1184 overflows, 1190 drops", q, err)
	}
	for _, bad := range []string{"", "TcpExt: ListenOverflows ListenDrops\n", "TcpExt: ListenOverflows ListenDrops\nTcpExt: 1\n",
		"TcpExt: ListenOverflows ListenDrops\nTcpExt: 1 x\n", "TcpExt: A B\nTcpExt: 1 2\n"} {
		if _, err := ParseListenQueue([]byte(bad)); err == nil {
			t.Errorf("ParseListenQueue(%q): no error", bad)
		}
	}
}

func TestReadListenQueue(t *testing.T) {
	if _, err := os.Stat("/proc/net/netstat"); err != nil {
		t.Skip("no /proc/net/netstat (not Linux)")
	}
	if _, err := ReadListenQueue(); err != nil {
		t.Fatal(err)
	}
}

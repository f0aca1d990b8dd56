package benchrun

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine records how busy the whole machine was over a benchmark, so that
// each table says what else was running beside it: on a shared 2-core box
// a ratio measured at 190% busy means less than one measured at 100%.
type Machine struct {
	started    time.Time
	loadBefore string
	busy, all  uint64 // /proc/stat jiffies at the start
	ok         bool
}

// StartMachine starts the record; Summary ends it.
func StartMachine() *Machine {
	m := &Machine{started: time.Now(), loadBefore: LoadAvg()}
	m.busy, m.all, m.ok = cpuJiffies()
	return m
}

// Summary is one line: cores, the share of all cores that was busy since
// StartMachine (every process, the benchmark's own included), the load
// averages before and now, and the time taken.
func (m *Machine) Summary() string {
	busy := "busy share unknown"
	if b, a, ok := cpuJiffies(); ok && m.ok && a > m.all {
		busy = fmt.Sprintf("%.0f%% of all cores busy", 100*float64(b-m.busy)/float64(a-m.all))
	}
	return fmt.Sprintf("Machine: %d CPUs, %s during the run (every process, this benchmark's included); load average (1, 5, 15 min) %s before, %s after; %s in all.",
		runtime.NumCPU(), busy, m.loadBefore, LoadAvg(), time.Since(m.started).Round(time.Second))
}

// cpuJiffies reads the "cpu" line of /proc/stat: the busy jiffies (all but
// idle and iowait) and all jiffies, summed over every core.
func cpuJiffies() (busy, all uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPULine(line)
}

func parseCPULine(line string) (busy, all uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already inside user and nice).
	for i, s := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		all += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, all, true
}

// MachineJiffies is the machine's busy and total CPU jiffies since boot,
// summed over every core (the "cpu" line of /proc/stat): the busy share
// of an interval is the difference of busy over that of all.
func MachineJiffies() (busy, all uint64, ok bool) { return cpuJiffies() }

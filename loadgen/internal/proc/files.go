package proc

import (
	"fmt"
	"io"
	"os"

	"github.com/knowngood/knowngood/shared/procfs"
)

// FileReserve is the number of descriptors kept free for everything that
// is not a load connection: the standard streams, the runtime's poller, the
// admin client, a log file.
const FileReserve = 32

// Files is this process's open-files budget.
type Files struct {
	Soft, Hard uint64 // RLIMIT_NOFILE, after raising the soft limit
	RaisedFrom uint64 // the soft limit before, when it was raised; 0 if not
	Open       int    // descriptors open now
}

// Allows is how many more connections (one descriptor each) the limit
// leaves room for, keeping FileReserve free.
func (f Files) Allows() int {
	free := int64(f.Soft) - int64(f.Open) - FileReserve
	return int(max(0, free))
}

// String says it plainly, on one line.
func (f Files) String() string {
	raised := ""
	if f.RaisedFrom != 0 {
		raised = fmt.Sprintf(", soft raised from %d", f.RaisedFrom)
	}
	return fmt.Sprintf("open-files limit %d (hard %d%s), %d open: room for %d connections", f.Soft, f.Hard, raised, f.Open, f.Allows())
}

// Check refuses want connections beyond the budget, with an error that
// names the flag that asked for them.
func (f Files) Check(flagName string, want int) error {
	if want <= f.Allows() {
		return nil
	}
	return fmt.Errorf("-%s %d is more than the open-files limit allows: %s; lower -%s or raise the limit (ulimit -n, up to the hard limit as a user; LimitNOFILE= for a service)",
		flagName, want, f, flagName)
}

// openFiles counts this process's open descriptors; when the system does
// not list them, it assumes a dozen.
func openFiles() int {
	if n, err := procfs.OpenFileCount(procfs.Self); err == nil {
		return n
	}
	if entries, err := os.ReadDir("/dev/fd"); err == nil {
		return len(entries) - 1 // the directory being read is one of them
	}
	return 12
}

// CheckFiles is what a run that opens want connections does first: it
// refuses them beyond the open-files budget (the error names flagName,
// the flag that asked for them), and returns the budget. Where the limit
// cannot be read, notes says so and the run goes on with a zero budget;
// tell also writes the budget there.
func CheckFiles(notes io.Writer, flagName string, want int, tell bool) (Files, error) {
	files, err := OpenFiles()
	if err != nil {
		fmt.Fprintf(notes, "loadgen: open-files limit unknown (%v); going on\n", err)
		return Files{}, nil
	}
	if tell {
		fmt.Fprintf(notes, "loadgen: %s\n", files)
	}
	return files, files.Check(flagName, want)
}

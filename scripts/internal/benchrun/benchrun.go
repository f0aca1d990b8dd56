// Package benchrun is what the benchmark programs under scripts/bench and
// the soak (scripts/soak) share: building the binaries, starting a server
// and waiting for its "listening" line, stopping it, and a few figures
// about processes (Linux /proc).
package benchrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Binaries are the freshly built knowngood and loadgen.
type Binaries struct {
	Server, Loadgen string
	dir             string
}

// Build compiles ./servers and ./loadgen into a temporary directory; Remove
// deletes it. It must run from the repository root.
func Build(ctx context.Context, stderr io.Writer) (*Binaries, error) {
	if _, err := os.Stat("go.mod"); err != nil {
		return nil, errors.New("run it from the repository root (no go.mod here)")
	}
	dir, err := os.MkdirTemp("", "knowngood-bench")
	if err != nil {
		return nil, err
	}
	b := &Binaries{Server: filepath.Join(dir, "knowngood"), Loadgen: filepath.Join(dir, "loadgen"), dir: dir}
	fmt.Fprintln(stderr, "building ./servers and ./loadgen")
	for _, p := range [][2]string{{b.Server, "./servers"}, {b.Loadgen, "./loadgen"}} {
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", p[0], p[1]).CombinedOutput(); err != nil {
			b.Remove()
			return nil, fmt.Errorf("go build %s: %v\n%s", p[1], err, out)
		}
	}
	return b, nil
}

// Remove deletes the binaries.
func (b *Binaries) Remove() { os.RemoveAll(b.dir) }

// Proc is a server process, once it has said that it listens.
type Proc struct {
	Cmd       *exec.Cmd
	Name      string
	Addr      string // from its "listening" line
	AdminAddr string // knowngood's admin listener; "" for others
	done      chan struct{}
	stopOnce  sync.Once
}

// PID is the process id.
func (p *Proc) PID() int { return p.Cmd.Process.Pid }

// Start runs a server and waits (at most 30 s) for its JSON line with msg
// "listening", which gives addr (and admin_addr for knowngood).
func Start(ctx context.Context, stderr io.Writer, bin string, args []string, name string) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Cmd: cmd, Name: name, done: make(chan struct{})}
	type ready struct{ addr, admin string }
	readyc := make(chan ready, 1)
	var wg sync.WaitGroup
	var tail lastLines
	scan := func(r io.Reader) {
		defer wg.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			tail.add(string(line))
			var m struct {
				Msg       string `json:"msg"`
				Addr      string `json:"addr"`
				AdminAddr string `json:"admin_addr"`
			}
			if json.Unmarshal(line, &m) == nil && m.Msg == "listening" && m.Addr != "" {
				select {
				case readyc <- ready{m.Addr, m.AdminAddr}:
				default:
				}
			}
		}
	}
	wg.Add(2)
	go scan(stdout)
	go scan(errPipe)
	go func() {
		wg.Wait() // the pipes are read to the end before Wait closes them
		_ = cmd.Wait()
		close(p.done)
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case r := <-readyc:
		p.Addr, p.AdminAddr = r.addr, r.admin
		fmt.Fprintf(stderr, "%s listening on %s\n", name, p.Addr)
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening: %s", name, tail.String())
	case <-t.C:
		p.Stop()
		return nil, fmt.Errorf("%s did not say it listens within 30s: %s", name, tail.String())
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
}

// Stop sends SIGTERM, and SIGKILL after 10 s, and waits for the exit.
func (p *Proc) Stop() {
	p.stopOnce.Do(func() {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.Cmd.Process.Kill()
			<-p.done
		}
	})
}

// FreeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func FreeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ProcCPU is the user+system CPU seconds of a process, from /proc (Linux).
func ProcCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const clkTck = 100 // USER_HZ on Linux
	return (ut + st) / clkTck, true
}

// OpenFilesSoft is a process's soft open-files limit (/proc/PID/limits).
func OpenFilesSoft(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if f[0] == "unlimited" {
					return 1 << 30, nil
				}
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/limits: no Max open files", pid)
}

// OpenFileCount is the number of descriptors a process has open.
func OpenFileCount(pid int) (int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(entries), err
}

// Median of the values; 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// LastLine is the last non-empty line of s, for one-line errors.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// lastLines keeps the last few lines of a server's output, for errors.
type lastLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lastLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > 5 {
		l.lines = l.lines[1:]
	}
}

func (l *lastLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, " | ")
}

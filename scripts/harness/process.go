package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Timeouts of a start and a stop; a variable so that the harness's own
// tests can shorten them.
var (
	// StartTimeout bounds the wait for the "listening" line and /health.
	StartTimeout = 30 * time.Second
	// StopTimeout is how long a process has between SIGTERM and SIGKILL.
	// knowngood's default -shutdown-timeout is 5 s.
	StopTimeout = 10 * time.Second
)

// Process is a running server that has said it listens: knowngood, or a
// reference server (Node) that prints the same "listening" line.
type Process struct {
	Name      string // for messages: "knowngood echo-gnet"
	Addr      string // HOST:PORT of the target, from its "listening" line
	AdminAddr string // HOST:PORT of knowngood's admin listener; "" for others

	cmd      *exec.Cmd
	out      *Output
	done     chan struct{} // closed once the process has exited
	exitErr  error         // Wait's answer, set before done is closed
	stopOnce sync.Once
	stopErr  error
	stats    statsClient
}

// StartProcess runs argv and waits (StartTimeout at most) for the JSON line
// {"msg":"listening","addr":...} on its stdout or stderr, which gives Addr
// (and admin_addr, AdminAddr, for knowngood). On an error the process has
// been stopped. The caller stops it with Stop.
func StartProcess(ctx context.Context, name string, argv []string) (*Process, error) {
	p := &Process{Name: name, cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	p.out = NewOutput()
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// A child that outlives the process (a wrapper's) may hold the output
	// open: Wait returns this long after the exit all the same.
	p.cmd.WaitDelay = time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.exitErr = p.cmd.Wait() // returns once the output is copied to the end
		close(p.done)
	}()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case l := <-p.out.listening:
		p.Addr, p.AdminAddr = l.Addr, l.AdminAddr
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening (%v): %s", name, p.exitErr, p.Tail())
	case <-timer.C:
		_ = p.Stop()
		return nil, fmt.Errorf("%s did not say it listens within %v: %s", name, StartTimeout, p.Tail())
	case <-ctx.Done():
		_ = p.Stop()
		return nil, ctx.Err()
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// ExitErr is how the process exited (nil for status 0), once Exited is
// closed.
func (p *Process) ExitErr() error {
	<-p.done
	return p.exitErr
}

// Log is everything the process wrote to stdout and stderr so far.
func (p *Process) Log() string { return p.out.String() }

// Tail is the last few lines of the log on one line, for errors.
func (p *Process) Tail() string { return p.out.tail(5) }

// ErrKilled is Stop's answer when SIGTERM was not enough.
var ErrKilled = errors.New("did not exit within the stop timeout of SIGTERM; killed")

// Stop sends SIGTERM, SIGKILL after StopTimeout, and waits for the exit;
// it answers ErrKilled when it had to kill. A process that has already
// exited is left as it is. Later calls answer the same.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		defer p.stats.close()
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(StopTimeout)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
			_ = p.cmd.Process.Kill()
			<-p.done
			p.stopErr = fmt.Errorf("%s %w", p.Name, ErrKilled)
		}
	})
	return p.stopErr
}

// Output keeps what a server process writes, its stdout and stderr, and
// finds the JSON "listening" line that knowngood (and every server the
// harness starts) prints once it accepts connections.
type Output struct {
	mu        sync.Mutex
	all       bytes.Buffer
	scanned   int // bytes of all already split into lines
	listening chan Listening
}

// Listening is the line a server prints once it accepts connections.
type Listening struct {
	Msg       string `json:"msg"`
	Addr      string `json:"addr"`       // HOST:PORT of the target
	AdminAddr string `json:"admin_addr"` // of its admin listener, if any
}

// NewOutput is an empty Output.
func NewOutput() *Output { return &Output{listening: make(chan Listening, 1)} }

// Listening delivers the first "listening" line, once it is written.
func (o *Output) Listening() <-chan Listening { return o.listening }

// Write keeps b and looks for the "listening" line in its whole lines.
func (o *Output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all.Write(b)
	for {
		rest := o.all.Bytes()[o.scanned:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return len(b), nil
		}
		o.scanned += i + 1
		var l Listening
		if json.Unmarshal(rest[:i], &l) == nil && l.Msg == "listening" && l.Addr != "" {
			select {
			case o.listening <- l:
			default: // only the first counts
			}
		}
	}
}

// String is everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.all.String()
}

func (o *Output) tail(n int) string {
	lines := strings.Split(strings.TrimSpace(o.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

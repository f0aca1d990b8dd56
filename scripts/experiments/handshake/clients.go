package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

// The clients, each as a user runs it, all over WebSocket unless named.
const (
	// clientReport is the founding report's client: python-socketio's
	// AsyncClient.connect(url, transports=['websocket']) as written, so
	// with its default wait_timeout of 1 s, which starts at the Engine.IO
	// open; the whole attempt is bounded by -deadline.
	clientReport  = "report"
	clientPython  = "python"  // the same client waiting the whole -deadline
	clientJS      = "js"      // the official socket.io-client v4
	clientLoadgen = "loadgen" // loadgen handshake
	// The zishang520 Go client with its default transports (a set it
	// picks the first of in map order: polling, websocket or
	// webtransport), at today's version and at the report's, v3.0.0; and
	// at today's with WebSocket alone, as the report says it used it.
	clientGo     = "go"
	clientGoV300 = "go-v3.0.0"
	clientGoWS   = "go-ws"
)

var allClients = []string{clientReport, clientPython, clientJS, clientLoadgen, clientGo, clientGoV300, clientGoWS}

// reportWait is python-socketio's default wait_timeout.
const reportWait = time.Second

const (
	goClientPkg = "./scripts/clients/sio-connect-go"
	// goV300Modfile pins the Go client at the report's version.
	goV300Modfile = "scripts/clients/sio-connect-go/v3.0.0/v300.mod"
)

// command is the client's command line for n connects to url; admin is
// knowngood's admin URL, "" for the real servers.
func command(client string, o options, bins *benchrun.Binaries, url, admin string, n int) ([]string, error) {
	ns, deadlineMs := strconv.Itoa(n), strconv.FormatInt(o.deadline.Milliseconds(), 10)
	switch client {
	case clientReport:
		return []string{"/usr/bin/python3", "scripts/clients/sio_connect.py", "--url", url, "--n", ns, "--transports", "websocket",
			"--deadline-ms", deadlineMs, "--wait-ms", strconv.FormatInt(reportWait.Milliseconds(), 10)}, nil
	case clientPython:
		return []string{"/usr/bin/python3", "scripts/clients/sio_connect.py", "--url", url, "--n", ns, "--transports", "websocket", "--deadline-ms", deadlineMs,
			"--latencies"}, nil
	case clientJS:
		return []string{"node", "scripts/clients/sio-connect.mjs", "--url", url, "--n", ns, "--transports", "websocket", "--deadline-ms", deadlineMs}, nil
	case clientLoadgen:
		cmd := []string{bins.Loadgen, "handshake", "-url", url, "-n", ns, "-deadline", o.deadline.String(), "-transport", "websocket", "-echo=false", "-json", "-"}
		if admin != "" {
			cmd = append(cmd, "-admin", admin)
		}
		return cmd, nil
	case clientGo, clientGoWS, clientGoV300:
		var bin string
		var err error
		if client == clientGoV300 {
			bin, err = harness.BuildModfile(goClientPkg, "sio-connect-go-v3.0.0", goV300Modfile)
		} else {
			bin, err = harness.Build(goClientPkg, "sio-connect-go")
		}
		if err != nil {
			return nil, err
		}
		cmd := []string{bin, "--url", url, "--n", ns, "--deadline-ms", deadlineMs}
		if client == clientGoWS {
			cmd = append(cmd, "--transports", "websocket")
		}
		return cmd, nil
	}
	return nil, fmt.Errorf("unknown client %q", client)
}

// echoers are a few clients connected before a run that call echo every
// 100 ms during it (scripts/clients/sio-echoers.mjs): the longest round
// trip one of them waited is what an already connected user saw.
type echoers struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

type echoResult struct {
	Calls        int      `json:"calls"`
	Acked        int      `json:"acked"`
	MaxRTTms     *float64 `json:"max_rtt_ms"`
	PendingMaxMs *float64 `json:"pending_max_ms"`
}

// worstMs is the longest round trip, counting a call still unanswered at
// the end as its age.
func (e *echoResult) worstMs() *float64 {
	if e == nil {
		return nil
	}
	worst := 0.0
	for _, v := range []*float64{e.MaxRTTms, e.PendingMaxMs} {
		if v != nil {
			worst = max(worst, *v)
		}
	}
	return &worst
}

// startEchoers connects n echoing clients to url and waits until each has.
func startEchoers(ctx context.Context, url string, n int) (*echoers, error) {
	cmd := exec.CommandContext(ctx, "node", "scripts/clients/sio-echoers.mjs", "--url", url, "--n", strconv.Itoa(n), "--deadline-ms", "600000")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &echoers{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	ready := make(chan error, 1)
	go func() {
		line, err := e.out.ReadString('\n')
		if err == nil && !strings.Contains(line, `"ready":true`) {
			err = fmt.Errorf("said %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("not connected within 30 s")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("echoers: %v: %s", err, benchrun.LastLine(stderr.String()))
	}
	return e, nil
}

// stop ends the echoing and returns what the echoers saw.
func (e *echoers) stop() (*echoResult, error) {
	_ = e.stdin.Close()
	line, err := e.out.ReadString('\n')
	waitErr := e.cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("echoers: %v (%v)", err, waitErr)
	}
	var r echoResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return nil, fmt.Errorf("echoers printed %q: %v", line, err)
	}
	return &r, nil
}

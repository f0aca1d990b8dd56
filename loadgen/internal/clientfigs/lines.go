package clientfigs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// clientLine is the JSON line of the project's Socket.IO clients
// (scripts/clients/sio-connect.mjs, sio_connect.py).
type clientLine struct {
	Client    string `json:"client"`
	Attempts  *int   `json:"attempts"`
	Connected *int   `json:"connected"`
	Sent      *int64 `json:"sent"`
	Received  *int64 `json:"received"`
}

// parseClientLine reads the last JSON line on stdout that has the shape of
// the project's Socket.IO clients: {"client":..,"attempts":N,"connected":n,
// "sent":n,"received":n,...}. sent and received (events emitted and acks
// back) are unknown in a line without them.
func parseClientLine(stdout []byte) (Figures, bool) {
	var found *clientLine
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var c clientLine
		if json.Unmarshal(line, &c) != nil || c.Client == "" || c.Attempts == nil || c.Connected == nil {
			continue
		}
		found = &c
	}
	if found == nil {
		return Unknown(), false
	}
	f := Unknown()
	f.Source = found.Client + " JSON line"
	f.Attempts, f.OK = *found.Attempts, *found.Connected
	if found.Sent != nil {
		f.Sent = *found.Sent
	}
	if found.Received != nil {
		f.Received = *found.Received
	}
	return f, true
}

// wsbenchLine is what websocket-bench (hashrocket/websocket-shootout,
// cmd/websocket-bench) prints after each step whose round trips stayed
// under its limit:
//
//	clients:  5000    95per-rtt: 123ms    min-rtt:   1ms    median-rtt:  40ms    max-rtt: 300ms
var wsbenchLine = regexp.MustCompile(`^clients:\s+(\d+)\s+\d+per-rtt:\s+\d+ms\s+min-rtt:\s+\d+ms\s+median-rtt:\s+\d+ms\s+max-rtt:\s+\d+ms\s*$`)

// parseWebsocketBench reads websocket-bench's step lines. It adds
// -step-size clients per step and sends exactly -sample-size echoes (or
// broadcasts) per step, waiting for each answer; a step whose percentile
// round trip is over the limit ends the run (exit 0) without a line. So,
// after an exit 0: connections = last line's clients + step size, and
// messages = (lines + 1) x sample size each way for echo (for broadcast
// only those sent: the fan-out it receives is not counted). After an
// exit other than 0 (a connection or a message failed, log.Fatal), the
// last step is unknown: no figures.
func parseWebsocketBench(stdout []byte, args []string, exitCode int) (Figures, error) {
	f := Unknown()
	f.Source = "websocket-bench output"
	if exitCode != 0 {
		return f, fmt.Errorf("websocket-bench exited %d: the step it stopped in is not printed, so its counts are unknown", exitCode)
	}
	mode, step, sample := "", int64(5000), int64(-1)
	for _, a := range args {
		if (a == "echo" || a == "broadcast") && mode == "" {
			mode = a
		}
	}
	if v, ok := flagValue(args, "--step-size", ""); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return f, fmt.Errorf("websocket-bench --step-size %q: %w", v, err)
		}
		step = n
	}
	if v, ok := flagValue(args, "--sample-size", "-s"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return f, fmt.Errorf("websocket-bench --sample-size %q: %w", v, err)
		}
		sample = n
	}
	if sample < 0 {
		sample = map[string]int64{"echo": 10000, "broadcast": 20}[mode]
	}
	lines, last := int64(0), int64(0)
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	for sc.Scan() {
		if m := wsbenchLine.FindSubmatch(bytes.TrimSpace(sc.Bytes())); m != nil {
			last, _ = strconv.ParseInt(string(m[1]), 10, 64)
			lines++
		}
	}
	conns := last + step
	f.Attempts, f.OK = int(conns), int(conns)
	switch mode {
	case "echo":
		f.Sent, f.Received = (lines+1)*sample, (lines+1)*sample
	case "broadcast":
		f.Sent = (lines + 1) * sample
	}
	return f, nil
}

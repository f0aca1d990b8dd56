package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// SioResult is the one JSON line that the Socket.IO connect clients print:
// scripts/clients/sio-connect.mjs (the official socket.io-client) and
// scripts/clients/sio_connect.py (python-socketio).
type SioResult struct {
	Client    string         `json:"client"`
	Version   string         `json:"version"`
	Attempts  int            `json:"attempts"`
	Connected int            `json:"connected"`
	Echoed    int            `json:"echoed"`
	Failed    int            `json:"failed"`
	Errors    map[string]int `json:"errors"`
	// EchoErrors counts the echoes that did not come back, by reason.
	EchoErrors map[string]int `json:"echo_errors"`
	// AttemptErrors counts every connect_error by message, retries
	// included; HTTPErrors those that carried an HTTP status, by status.
	AttemptErrors map[string]int `json:"attempt_errors"`
	HTTPErrors    map[string]int `json:"http_errors"`
	P50           float64        `json:"p50_ms"`
	Max           float64        `json:"max_ms"`
	Total         float64        `json:"total_ms"`
	TimesMS       []float64      `json:"times_ms"`
	// LoopDelayMax is how long the JS client's own event loop was held up
	// at the most during the connects: how late it can have seen one.
	LoopDelayMax float64 `json:"loop_delay_max_ms"`
}

// sioClients are the connect clients by name, each an interpreter and its
// script below the module's root.
var sioClients = map[string][2]string{
	"js":     {"node", "scripts/clients/sio-connect.mjs"},
	"python": {"/usr/bin/python3", "scripts/clients/sio_connect.py"},
}

// SioConnect runs the connect client named client ("js" or "python") with
// args, for two minutes at the most, and decodes its line; the test fails
// when the client does, with its stderr.
func SioConnect(t testing.TB, client string, args ...string) SioResult {
	t.Helper()
	c, ok := sioClients[client]
	if !ok {
		t.Fatalf("no Socket.IO connect client %q: want js or python", client)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c[0], append([]string{filepath.Join(root, c[1])}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s client %v: %v\n%s", client, args, err, stderr.String())
	}
	var r SioResult
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		t.Fatalf("%s client printed %q: %v", client, out, err)
	}
	return r
}

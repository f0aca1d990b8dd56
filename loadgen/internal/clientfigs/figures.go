package clientfigs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Figures are a load tool's own counts, in the target's units (Socket.IO
// handshakes and events on a Socket.IO target, WebSocket connections and
// messages on a WebSocket one). Each is -1 when unknown.
type Figures struct {
	// Source says where the figures came from ("k6 summary",
	// "-client-json", ...); "" when none were found.
	Source string `json:"client_source"`
	// Attempts: connections (handshakes) the tool tried; OK: those it
	// counted as done.
	Attempts int `json:"client_attempts"`
	OK       int `json:"client_ok"`
	// Sent: messages the tool sent; Received: those it counted back.
	Sent     int64 `json:"client_sent"`
	Received int64 `json:"client_received"`
	// Frames: Sent and Received count WebSocket frames, not Socket.IO
	// events (a generic k6 script's ws_msgs_*): on a Socket.IO target they
	// mean nothing to the server's counts, and are dropped.
	Frames bool `json:"-"`
}

// Unknown is no figures at all.
func Unknown() Figures { return Figures{Attempts: -1, OK: -1, Sent: -1, Received: -1} }

// Known reports whether any figure is known.
func (f Figures) Known() bool {
	return f.Attempts >= 0 || f.OK >= 0 || f.Sent >= 0 || f.Received >= 0
}

// ForSocketIO drops what does not count Socket.IO events (Frames).
func (f Figures) ForSocketIO() Figures {
	if f.Frames {
		f.Sent, f.Received, f.Frames = -1, -1, false
	}
	return f
}

// JSONShape is the -client-json file: the counts of a tool that loadgen
// does not read itself, written by the tool (or a wrapper) after its run.
// Each field is optional; a missing one is unknown.
//
//	{"attempts": 100, "ok": 98, "sent": 980, "received": 980}
type JSONShape struct {
	Attempts *int   `json:"attempts"`
	OK       *int   `json:"ok"`
	Sent     *int64 `json:"sent"`
	Received *int64 `json:"received"`
}

// ReadJSONFile reads a -client-json file.
func ReadJSONFile(path string) (Figures, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Unknown(), fmt.Errorf("-client-json: %w", err)
	}
	f, err := ParseJSON(raw)
	if err != nil {
		return Unknown(), fmt.Errorf("-client-json %s: %w", path, err)
	}
	return f, nil
}

// ParseJSON reads the -client-json shape: one JSON object whose fields
// are all optional counts, 0 or more, ok no more than attempts.
func ParseJSON(raw []byte) (Figures, error) {
	var s JSONShape
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Unknown(), fmt.Errorf(`want {"attempts":N,"ok":N,"sent":N,"received":N} (each optional): %w`, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Unknown(), errors.New("want one JSON object, found more after it")
	}
	f := Unknown()
	f.Source = "-client-json"
	var bad []string
	take(&f.Attempts, s.Attempts, "attempts", &bad)
	take(&f.OK, s.OK, "ok", &bad)
	take(&f.Sent, s.Sent, "sent", &bad)
	take(&f.Received, s.Received, "received", &bad)
	if len(bad) > 0 {
		return Unknown(), fmt.Errorf("%s: want a count, 0 or more", strings.Join(bad, ", "))
	}
	if f.Attempts >= 0 && f.OK > f.Attempts {
		return Unknown(), fmt.Errorf("ok %d is more than attempts %d", f.OK, f.Attempts)
	}
	return f, nil
}

// take sets *to to the count given (from; nil when it was left out), and
// adds name to bad when that count is negative.
func take[N int | int64](to, from *N, name string, bad *[]string) {
	if from == nil {
		return
	}
	*to = *from
	if *to < 0 {
		*bad = append(*bad, name)
	}
}

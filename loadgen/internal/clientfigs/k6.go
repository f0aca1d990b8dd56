package clientfigs

import (
	"encoding/json"
	"errors"
	"math"
)

// The k6 counters of the project's recipes (scripts/k6), in the target's
// units; any k6 script that defines Counters with these names is read the
// same way.
const (
	K6Attempts = "knowngood_attempts" // connections (handshakes) tried
	K6OK       = "knowngood_ok"       // of those, completed (the 101, or the namespace CONNECT ack)
	K6Sent     = "knowngood_sent"     // messages (Socket.IO events) sent
	K6Received = "knowngood_received" // messages (acks, echoes) received
)

// k6Metric is one metric of k6's end-of-test summary: --summary-export
// puts a counter's count at the top, handleSummary's data under values.
type k6Metric struct {
	Count  *float64 `json:"count"`
	Values *struct {
		Count *float64 `json:"count"`
	} `json:"values"`
}

func (m k6Metric) count() (int64, bool) {
	switch {
	case m.Count != nil:
		return int64(math.Round(*m.Count)), true
	case m.Values != nil && m.Values.Count != nil:
		return int64(math.Round(*m.Values.Count)), true
	}
	return 0, false
}

// parseK6 reads k6's summary JSON (--summary-export, or handleSummary's
// data written as JSON). The knowngood_* counters map exactly; without
// them, ws_sessions is the connections tried (k6 counts a session whose
// dial was refused too: the connections done are unknown), and
// ws_msgs_sent / ws_msgs_received the WebSocket messages each way
// (frames: not Socket.IO events). A metric that is absent is unknown,
// except that a knowngood_* counter that never counted is absent too:
// when any of them is there, the missing ones are 0.
func parseK6(raw []byte) (Figures, error) {
	var s struct {
		Metrics map[string]k6Metric `json:"metrics"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return Unknown(), err
	}
	if s.Metrics == nil {
		return Unknown(), errors.New("no metrics in it")
	}
	f := Unknown()
	get := func(name string) (int64, bool) {
		m, ok := s.Metrics[name]
		if !ok {
			return 0, false
		}
		return m.count()
	}
	own := false
	for _, name := range []string{K6Attempts, K6OK, K6Sent, K6Received} {
		if _, ok := get(name); ok {
			own = true
		}
	}
	if own {
		a, _ := get(K6Attempts)
		ok, _ := get(K6OK)
		f.Attempts, f.OK = int(a), int(ok)
		f.Sent, _ = get(K6Sent)
		f.Received, _ = get(K6Received)
		return f, nil
	}
	n, ws := get("ws_sessions")
	if !ws {
		return f, nil // not a k6/ws script
	}
	// A counter that never counted is left out of the summary: 0.
	f.Attempts, f.Frames = int(n), true
	f.Sent, _ = get("ws_msgs_sent")
	f.Received, _ = get("ws_msgs_received")
	return f, nil
}

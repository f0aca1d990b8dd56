package clientfigs

import (
	"encoding/json"
	"errors"
)

// parseArtillery reads artillery's --output report: its aggregate
// counters. Every virtual user of the ws and socketio engines opens one
// connection, so vusers.created is the connections tried; artillery
// counts no connection apart from a failed user (vusers.failed, whether it
// failed connecting or later), so the connections done are known only
// when no user failed (then all of them). Messages: the ws engine's
// websocket.messages_sent and websocket.messages_received; the socketio
// engine's socketio.emit (events sent; what came back, acks and
// responses, is not counted: unknown).
func parseArtillery(raw []byte) (Figures, error) {
	var r struct {
		Aggregate *struct {
			Counters map[string]int64 `json:"counters"`
		} `json:"aggregate"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Unknown(), err
	}
	if r.Aggregate == nil {
		return Unknown(), errors.New("no aggregate in it")
	}
	c := r.Aggregate.Counters
	f := Unknown()
	created, ok := c["vusers.created"]
	if !ok {
		return f, nil // no user started
	}
	f.Attempts = int(created)
	if c["vusers.failed"] == 0 {
		f.OK = int(created)
	}
	if emits, sio := c["socketio.emit"]; sio {
		f.Sent = emits
	} else {
		// A counter that never counted is left out of the report.
		f.Sent, f.Received = c["websocket.messages_sent"], c["websocket.messages_received"]
	}
	return f, nil
}

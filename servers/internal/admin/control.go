package admin

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/shared/metrics"
)

// Control is who may give the target orders at run time, and the target.
type Control struct {
	// Target is checked for control.Dropper, control.Pusher and
	// control.Faulter; a target that is not the one an order needs
	// answers it 501.
	Target any
	// Token (-admin-token), when set, must come as Authorization: Bearer
	// TOKEN; without one, orders are taken only when Loopback (the admin
	// listener is bound to a loopback address).
	Token    string
	Loopback bool
}

// defaultDropCode is what a drop sends the WebSocket clients unless told:
// 1001, the code a server that goes away sends.
const defaultDropCode = 1001

func (o Options) controlRoutes(mux *http.ServeMux, m *metrics.Metrics) {
	mux.HandleFunc("POST /control/drop", o.Control.allowed(func(w http.ResponseWriter, r *http.Request) {
		drop(w, r, o.Variant, o.Control.Target, m)
	}))
	mux.HandleFunc("POST /control/push", o.Control.allowed(func(w http.ResponseWriter, r *http.Request) {
		push(w, r, o.Variant, o.Control.Target, m)
	}))
	mux.HandleFunc("POST /control/fault", o.Control.allowed(func(w http.ResponseWriter, r *http.Request) {
		o.setFault(w, r, m)
	}))
	mux.HandleFunc("GET /control/fault", o.showFault)
	mux.HandleFunc("GET /control/storm", func(w http.ResponseWriter, _ *http.Request) {
		if m == nil {
			http.Error(w, "metrics are off (-metrics=false): no storm is watched", http.StatusNotFound)
			return
		}
		if s := m.Snapshot().Storm; s != nil {
			writeJSON(w, s)
			return
		}
		http.Error(w, "no drop yet: POST /control/drop starts one", http.StatusNotFound)
	})
}

// allowed serves next only to whoever may give orders.
func (c Control) allowed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(c.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="knowngood control"`)
				http.Error(w, "orders need the token of -admin-token, as Authorization: Bearer TOKEN", http.StatusUnauthorized)
				return
			}
		} else if !c.Loopback {
			http.Error(w, "orders are off: the admin listener is not on a loopback address (-admin-addr); set -admin-token to take them here", http.StatusForbidden)
			return
		}
		next(w, r)
	}
}

// DropAnswer is what POST /control/drop answers.
type DropAnswer struct {
	Action  string  `json:"action"`
	Dropped int     `json:"dropped"`
	Open    int     `json:"open"`
	Ratio   float64 `json:"fraction"`
	Code    int     `json:"code,omitempty"`
	How     string  `json:"how,omitempty"`
	// Storm is where the report of the clients' return is.
	Storm string `json:"storm,omitempty"`
}

// drop reads ?fraction= (default 1), ?code= (WebSocket, default 1001) and
// ?how=transport|disconnect (Socket.IO, default transport).
func drop(w http.ResponseWriter, r *http.Request, variant string, target any, m *metrics.Metrics) {
	d, ok := target.(control.Dropper)
	if !ok {
		http.Error(w, variant+" cannot drop its clients", http.StatusNotImplemented)
		return
	}
	q := r.URL.Query()
	fraction, code := 1.0, defaultDropCode
	var err error
	if v := q.Get("fraction"); v != "" {
		if fraction, err = strconv.ParseFloat(v, 64); err != nil || !(fraction > 0 && fraction <= 1) {
			http.Error(w, fmt.Sprintf("invalid value for fraction: %q; want a number above 0 and at most 1", v), http.StatusBadRequest)
			return
		}
	}
	if v := q.Get("code"); v != "" {
		if code, err = strconv.Atoi(v); err != nil || !closeCodeSendable(code) {
			http.Error(w, fmt.Sprintf("invalid value for code: %q; want a close code a server may send: 1000, 1001, 1008, 1011-1013 or 3000-4999", v), http.StatusBadRequest)
			return
		}
	}
	how := q.Get("how")
	switch how {
	case "", "transport", "disconnect":
	default:
		http.Error(w, fmt.Sprintf("invalid value for how: %q; want transport (the session closed under the client, which reconnects) or disconnect (a Socket.IO DISCONNECT, after which it does not)", how), http.StatusBadRequest)
		return
	}
	// The watch starts before the first close, so that a client that is
	// back within microseconds is seen.
	m.WatchStorm()
	dropped, open := d.Drop(fraction, control.How{Code: code, Disconnect: how == "disconnect"})
	m.StormDropped(dropped)
	m.Control("drop")
	a := DropAnswer{Action: "drop", Dropped: dropped, Open: open, Ratio: fraction, Code: code, How: how}
	if m != nil {
		a.Storm = "/control/storm"
	}
	writeJSON(w, a)
}

// closeCodeSendable reports whether a server may send code in a close
// frame (RFC 6455 7.4).
func closeCodeSendable(code int) bool {
	switch {
	case code == 1000, code == 1001, code == 1008, code >= 1011 && code <= 1013:
		return true
	default:
		return code >= 3000 && code <= 4999
	}
}

// PushAnswer is what POST /control/push answers: the push running now.
type PushAnswer struct {
	Action     string  `json:"action"`
	State      string  `json:"state"` // on or off
	IntervalMs float64 `json:"interval_ms,omitempty"`
	Size       int     `json:"size,omitempty"`
}

// Bounds of a push ordered at run time: as -push-interval and -push-size
// are bounded at start.
const (
	minPushInterval = time.Millisecond
	maxPushInterval = time.Hour
	maxPushSize     = 1 << 20
)

// push reads ?state=on|off (required), ?interval= (a duration) and ?size=
// (bytes); without them the push takes -push-interval and -push-size.
func push(w http.ResponseWriter, r *http.Request, variant string, target any, m *metrics.Metrics) {
	p, ok := target.(control.Pusher)
	if !ok {
		http.Error(w, variant+" has no timed push (the broadcast and Socket.IO targets do)", http.StatusNotImplemented)
		return
	}
	q := r.URL.Query()
	var want control.Push
	switch q.Get("state") {
	case "on":
		want.On = true
	case "off":
	default:
		http.Error(w, fmt.Sprintf("invalid value for state: %q; want on or off", q.Get("state")), http.StatusBadRequest)
		return
	}
	if v := q.Get("interval"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minPushInterval || d > maxPushInterval {
			http.Error(w, fmt.Sprintf("invalid value for interval: %q; want a duration from %v to %v, such as 100ms", v, minPushInterval, maxPushInterval), http.StatusBadRequest)
			return
		}
		want.Interval = d
	}
	if v := q.Get("size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPushSize {
			http.Error(w, fmt.Sprintf("invalid value for size: %q; want bytes from 1 to %d", v, maxPushSize), http.StatusBadRequest)
			return
		}
		want.Size = n
	}
	got, err := p.SetPush(want)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	m.Control("push")
	a := PushAnswer{Action: "push", State: "off"}
	if got.On {
		a = PushAnswer{Action: "push", State: "on", IntervalMs: float64(got.Interval.Microseconds()) / 1000, Size: got.Size}
	}
	writeJSON(w, a)
}

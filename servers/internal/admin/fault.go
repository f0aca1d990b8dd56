package admin

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// FaultAnswer is what POST and GET /control/fault answer: the known-bad
// modes in force.
type FaultAnswer struct {
	Action string `json:"action"` // fault
	// Modes has every mode the target applies by name, in the form its
	// flag takes (and /health shows): "0.2", "200ms", "10", "true"; "0",
	// "0s" or "false" when off.
	Modes map[string]string `json:"modes"`
	On    []string          `json:"on"` // the names of the modes on
}

// injectorOf is target's injector of the known-bad modes, nil when it has
// none that can be switched.
func injectorOf(target any) *faults.Injector {
	if f, ok := target.(control.Faulter); ok {
		return f.Faults()
	}
	return nil
}

// appliedModes are the names of the modes o's target applies: the
// Socket.IO ones act on what only a Socket.IO target has (a socket's
// interval timer, a polling POST).
func (o Options) appliedModes() []string {
	return slices.DeleteFunc(faults.Names(), func(name string) bool {
		return faults.SocketIOOnly(name) && o.About.Protocol != protocol.ProtocolSocketIO
	})
}

func (o Options) faultAnswer(m faults.Modes) FaultAnswer {
	a := FaultAnswer{Action: "fault", Modes: map[string]string{}, On: []string{}}
	applied := o.appliedModes()
	values := m.Values()
	for _, name := range applied {
		a.Modes[name] = values[name]
	}
	for _, name := range m.Active() {
		if slices.Contains(applied, name) {
			a.On = append(a.On, name)
		}
	}
	return a
}

// showFault answers GET /control/fault: the modes in force.
func (o Options) showFault(w http.ResponseWriter, _ *http.Request) {
	f := injectorOf(o.Control.Target)
	if f == nil {
		http.Error(w, o.Variant+" has no known-bad modes to switch", http.StatusNotImplemented)
		return
	}
	writeJSON(w, o.faultAnswer(f.Modes()))
}

// setFault answers POST /control/fault?NAME=VALUE...: every mode named
// is set, the others kept; all=off turns every mode off first. Nothing
// changes unless every parameter is good.
func (o Options) setFault(w http.ResponseWriter, r *http.Request, m *metrics.Metrics) {
	f := injectorOf(o.Control.Target)
	if f == nil {
		http.Error(w, o.Variant+" has no known-bad modes to switch", http.StatusNotImplemented)
		return
	}
	change, msg := o.parseFault(r.URL.Query())
	if msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	now := f.Update(change)
	m.Control("fault")
	writeJSON(w, o.faultAnswer(now))
}

// parseFault reads the query of POST /control/fault into the change it
// asks for, or says why it is refused: a 400 naming the parameter.
func (o Options) parseFault(q url.Values) (func(*faults.Modes), string) {
	applied := o.appliedModes()
	if len(q) == 0 {
		return nil, fmt.Sprintf("no mode given: want NAME=VALUE for any of %s, or all=off", strings.Join(applied, ", "))
	}
	var given faults.Modes // the values named, each checked alone
	allOff := false
	for _, name := range slices.Sorted(maps.Keys(q)) {
		values := q[name]
		if len(values) != 1 {
			return nil, fmt.Sprintf("invalid value for %s: given %d times; want it once", name, len(values))
		}
		v := values[0]
		switch {
		case name == "all":
			if v != faults.Off && v != "0" {
				return nil, fmt.Sprintf("invalid value for all: %q; want off", v)
			}
			allOff = true
			continue
		case !slices.Contains(faults.Names(), name):
			return nil, fmt.Sprintf("invalid parameter %q: no known-bad mode is called that; want any of %s, or all=off", name, strings.Join(applied, ", "))
		case !slices.Contains(applied, name):
			return nil, fmt.Sprintf("invalid parameter %s: %s does not apply it; only the Socket.IO targets do", name, o.Variant)
		}
		if err := given.Parse(name, v); err != nil {
			return nil, fmt.Sprintf("invalid value for %s: %q; %v", name, v, err)
		}
	}
	if name, why := given.Check(); name != "" {
		return nil, fmt.Sprintf("invalid value for %s: %s", name, why)
	}
	return func(m *faults.Modes) {
		if allOff {
			*m = faults.Modes{}
		}
		for name := range q {
			if name != "all" {
				_ = m.Parse(name, q.Get(name)) // parsed above
			}
		}
	}, ""
}

package admin_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// faulter is a target whose known-bad modes are switched.
type faulter struct{ f *faults.Injector }

func (f faulter) Faults() *faults.Injector { return f.f }

var socketIOAbout = protocol.About{Protocol: protocol.ProtocolSocketIO, Family: "socketio", Connect: protocol.ConnectSharedLoop}

// faultAnswer decodes an answer of /control/fault.
func faultAnswer(t *testing.T, code int, body string) admin.FaultAnswer {
	t.Helper()
	var a admin.FaultAnswer
	if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || a.Action != "fault" {
		t.Fatalf("%d %v %s", code, err, body)
	}
	return a
}

// TestControlFault: each mode set by its parameter and kept by the
// orders that do not name it, turned off by off, 0 or all=off; the
// answer, GET /control/fault and /health show the modes in force; each
// order carried out is counted.
func TestControlFault(t *testing.T) {
	cfg := config.Default()
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.Faults.Delay = time.Second // given at start
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "empty")
	f := faults.New(cfg.Faults, m)
	h := admin.Handler(settings.Admin(cfg, socketIOAbout, faulter{f}), reg, m, nil)

	code, body := get(t, h, "/control/fault")
	if a := faultAnswer(t, code, body); a.Modes["delay"] != "1s" || !slices.Equal(a.On, []string{"delay"}) || len(a.Modes) != 6 {
		t.Errorf("GET at start: %+v; want delay 1s on, six modes", a)
	}
	steps := []struct {
		query string
		want  faults.Modes
	}{
		{"reject=0.5&close-after=10&drop=0.1&leak-timers=1s&drop-chunked-post=true",
			faults.Modes{Reject: 0.5, Delay: time.Second, CloseAfter: 10, Drop: 0.1, LeakTimers: time.Second, DropChunkedPost: true}},
		{"drop=off&delay=200ms", faults.Modes{Reject: 0.5, Delay: 200 * time.Millisecond, CloseAfter: 10, LeakTimers: time.Second, DropChunkedPost: true}},
		{"reject=0&leak-timers=0&drop-chunked-post=false", faults.Modes{Delay: 200 * time.Millisecond, CloseAfter: 10}},
		{"all=off", faults.Modes{}},
		{"all=off&drop=1", faults.Modes{Drop: 1}},
	}
	for _, s := range steps {
		code, body := post(t, h, "/control/fault?"+s.query, "")
		a := faultAnswer(t, code, body)
		if got := f.Modes(); got != s.want {
			t.Errorf("after %s: in force %+v, want %+v", s.query, got, s.want)
		}
		if want := s.want.Values(); !maps.Equal(a.Modes, want) || !slices.Equal(a.On, nonNil(s.want.Active())) {
			t.Errorf("after %s: answered %+v, want %v on %v", s.query, a, want, s.want.Active())
		}
		code, body = get(t, h, "/control/fault")
		if g := faultAnswer(t, code, body); !maps.Equal(g.Modes, a.Modes) || !slices.Equal(g.On, a.On) {
			t.Errorf("after %s: GET %+v, POST answered %+v", s.query, g, a)
		}
		var health admin.Health
		_, body = get(t, h, "/health")
		if err := json.Unmarshal([]byte(body), &health); err != nil {
			t.Fatal(err)
		}
		for name, v := range s.want.Values() {
			if health.Config["fault-"+name] != v {
				t.Errorf("after %s: /health fault-%s = %q, want %q", s.query, name, health.Config["fault-"+name], v)
			}
		}
	}
	if got := m.Snapshot().Controls["fault"]; got != uint64(len(steps)) {
		t.Errorf("controls fault = %d, want %d", got, len(steps))
	}

	// Refused, naming the parameter; nothing changes, none counted: not
	// even the good parameters beside a bad one.
	before := f.Modes()
	for _, c := range []struct{ query, says string }{
		{"", "no mode given"},
		{"reject=1.5", "invalid value for reject: 1.5; want a fraction from 0 to 1"},
		{"reject=NaN", "invalid value for reject"},
		{"drop=2", "invalid value for drop"},
		{"drop=lots", `invalid value for drop: "lots"; want a fraction`},
		{"delay=-1s", "invalid value for delay: -1s; want 0 (off) or a positive duration"},
		{"delay=soon", `invalid value for delay: "soon"; want a duration`},
		{"close-after=-1", "invalid value for close-after"},
		{"close-after=1.5", "invalid value for close-after"},
		{"leak-timers=5ms", "invalid value for leak-timers: 5ms; want 0 (off) or a period of at least 10ms"},
		{"drop-chunked-post=maybe", "invalid value for drop-chunked-post"},
		{"all=on", `invalid value for all: "on"; want off`},
		{"slow=1", `invalid parameter "slow"`},
		{"fault-drop=1", `invalid parameter "fault-drop"`},
		{"drop=1&drop=0", "invalid value for drop: given 2 times"},
		{"reject=1&delay=soon", "invalid value for delay"},
	} {
		code, body := post(t, h, "/control/fault?"+c.query, "")
		if code != http.StatusBadRequest || !strings.Contains(body, c.says) {
			t.Errorf("fault?%s: %d %q; want 400 saying %q", c.query, code, body, c.says)
		}
	}
	if f.Modes() != before || m.Snapshot().Controls["fault"] != uint64(len(steps)) {
		t.Errorf("refused orders changed the modes (%+v, was %+v) or were counted", f.Modes(), before)
	}

	// The Socket.IO modes on a target that speaks another protocol.
	h = admin.Handler(settings.Admin(cfg, protocol.About{Protocol: "websocket"}, faulter{f}), nil, nil, nil)
	for _, q := range []string{"leak-timers=1s", "drop-chunked-post=true"} {
		code, body := post(t, h, "/control/fault?"+q, "")
		if name, _, _ := strings.Cut(q, "="); code != 400 || !strings.Contains(body, "invalid parameter "+name) || !strings.Contains(body, "Socket.IO") {
			t.Errorf("fault?%s on a WebSocket target: %d %q; want 400 naming %s", q, code, body, name)
		}
	}
	code, body = get(t, h, "/control/fault")
	if a := faultAnswer(t, code, body); len(a.Modes) != 4 || a.Modes["leak-timers"] != "" {
		t.Errorf("GET on a WebSocket target: %+v; want its four modes", a)
	}

	h = admin.Handler(settings.Admin(cfg, socketIOAbout, struct{}{}), nil, nil, nil)
	if code, _ := post(t, h, "/control/fault?drop=1", ""); code != http.StatusNotImplemented {
		t.Errorf("POST on a target without modes: %d, want 501", code)
	}
	if code, _ := get(t, h, "/control/fault"); code != http.StatusNotImplemented {
		t.Errorf("GET on a target without modes: %d, want 501", code)
	}
}

// TestControlFaultRace: orders at once are carried out one after the
// other, and each answer is the modes one of them left whole: never half
// of one order and half of another (run under -race).
func TestControlFaultRace(t *testing.T) {
	cfg := config.Default()
	cfg.AdminAddr = "127.0.0.1:0"
	f := faults.New(faults.Modes{}, nil)
	h := admin.Handler(settings.Admin(cfg, socketIOAbout, faulter{f}), nil, nil, nil)
	var wg sync.WaitGroup
	for i := range 40 {
		query := "reject=1&drop=1&delay=5ms"
		if i%2 == 1 {
			query = "all=off"
		}
		wg.Go(func() {
			code, body := post(t, h, "/control/fault?"+query, "")
			var a admin.FaultAnswer
			if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil {
				t.Errorf("%s: %d %s", query, code, body)
				return
			}
			if on := len(a.On); on != 0 && on != 3 {
				t.Errorf("%s answered %v on: half an order", query, a.On)
			}
		})
	}
	wg.Wait()
	if on := len(f.Modes().Active()); on != 0 && on != 3 {
		t.Errorf("in force at the end: %+v", f.Modes())
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// dropper drops half of its ten clients, and remembers how it was told.
type dropper struct{ how control.How }

func (d *dropper) Drop(fraction float64, how control.How) (int, int) {
	d.how = how
	return len(control.Pick(10, fraction)), 10
}

func post(t *testing.T, h http.Handler, path, token string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	h.ServeHTTP(rec, r)
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, strings.TrimSpace(string(body))
}

// TestControlWho: orders are taken on a loopback admin listener, or with
// -admin-token from whoever sends it; refused otherwise, naming the flag.
// Every order alike: a drop, a switch of the known-bad modes.
func TestControlWho(t *testing.T) {
	target := struct {
		*dropper
		faulter
	}{&dropper{}, faulter{faults.New(faults.Modes{}, nil)}}
	for _, c := range []struct {
		name, addr, token, sent string
		want                    int
		says                    string
	}{
		{"loopback", "127.0.0.1:9100", "", "", 200, ""},
		{"loopback v6", "[::1]:9100", "", "", 200, ""},
		{"localhost", "localhost:9100", "", "", 200, ""},
		{"every address", ":9100", "", "", 403, "-admin-token"},
		{"a public address", "192.0.2.1:9100", "", "", 403, "-admin-addr"},
		{"token sent", ":9100", "s3cret", "s3cret", 200, ""},
		{"token missing", ":9100", "s3cret", "", 401, "-admin-token"},
		{"token wrong", "127.0.0.1:9100", "s3cret", "guess", 401, "Bearer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.AdminAddr, cfg.AdminToken = c.addr, c.token
			h := admin.Handler(settings.Admin(cfg, protocol.About{}, target), nil, nil, nil)
			for _, order := range []string{"/control/drop", "/control/fault?drop=1"} {
				code, body := post(t, h, order, c.sent)
				if code != c.want || !strings.Contains(body, c.says) {
					t.Errorf("%s: %d %q; want %d naming %q", order, code, body, c.want, c.says)
				}
			}
			// Reading the modes in force is not an order: anyone may,
			// as /health shows them to anyone.
			if code, _ := get(t, h, "/control/fault"); code != 200 {
				t.Errorf("GET /control/fault: %d, want 200", code)
			}
		})
	}
}

// TestControlDrop: a drop's answer, its parameters' defaults and refusals,
// the count, and the storm it starts.
func TestControlDrop(t *testing.T) {
	cfg := config.Default()
	cfg.AdminAddr = "127.0.0.1:0"
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "echo-gorilla")
	d := &dropper{}
	h := admin.Handler(settings.Admin(cfg, protocol.About{}, d), reg, m, nil)

	if code, body := get(t, h, "/control/storm"); code != 404 || !strings.Contains(body, "no drop yet") {
		t.Errorf("/control/storm before a drop: %d %q", code, body)
	}
	code, body := post(t, h, "/control/drop?fraction=0.5", "")
	var a admin.DropAnswer
	if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil {
		t.Fatalf("drop: %d %v %s", code, err, body)
	}
	if a.Dropped != 5 || a.Open != 10 || a.Code != 1001 || d.how != (control.How{Code: 1001}) || a.Storm != "/control/storm" {
		t.Errorf("drop answered %+v, told %+v; want 5 of 10 with 1001", a, d.how)
	}
	if code, _ := post(t, h, "/control/drop?code=4000&how=disconnect", ""); code != 200 || d.how != (control.How{Code: 4000, Disconnect: true}) {
		t.Errorf("drop with code and how: %d, told %+v", code, d.how)
	}
	m.Opened() // a client back
	code, body = get(t, h, "/control/storm")
	var s protocol.Storm
	if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil || s.Dropped != 10 || s.Reconnects != 1 || s.Pattern != protocol.StormFew {
		t.Errorf("/control/storm: %d %v %s", code, err, body)
	}
	if got := m.Snapshot().Controls["drop"]; got != 2 {
		t.Errorf("controls drop = %d, want 2", got)
	}
	for _, c := range []struct{ query, names string }{
		{"fraction=0", "fraction"}, {"fraction=1.5", "fraction"}, {"fraction=half", "fraction"},
		{"code=1005", "code"}, {"code=999", "code"}, {"code=x", "code"}, {"how=kill", "how"},
	} {
		if code, body := post(t, h, "/control/drop?"+c.query, ""); code != 400 || !strings.Contains(body, "invalid value for "+c.names) {
			t.Errorf("drop?%s: %d %q; want 400 naming %s", c.query, code, body, c.names)
		}
	}
	if got := m.Snapshot().Controls["drop"]; got != 2 {
		t.Errorf("a refused order was counted: controls drop = %d, want 2", got)
	}
	h = admin.Handler(settings.Admin(cfg, protocol.About{}, struct{}{}), nil, nil, nil)
	if code, _ := post(t, h, "/control/drop", ""); code != http.StatusNotImplemented {
		t.Errorf("drop on a target that cannot: %d, want 501", code)
	}
}

// pusher keeps the push it was last told to run.
type pusher struct{ now control.Push }

func (p *pusher) SetPush(want control.Push) (control.Push, error) {
	p.now = control.Push{}
	if want.On {
		p.now = want.Defaults(0, 0)
	}
	return p.now, nil
}

// TestControlPush: the push's answer, its defaults and refusals.
func TestControlPush(t *testing.T) {
	cfg := config.Default()
	cfg.AdminAddr = "127.0.0.1:0"
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "broadcast-gnet")
	p := &pusher{}
	h := admin.Handler(settings.Admin(cfg, protocol.About{}, p), reg, m, nil)
	for _, c := range []struct {
		query string
		want  admin.PushAnswer
	}{
		{"state=on&interval=50ms&size=20", admin.PushAnswer{Action: "push", State: "on", IntervalMs: 50, Size: 20}},
		{"state=on", admin.PushAnswer{Action: "push", State: "on", IntervalMs: 1000, Size: 100}},
		{"state=off", admin.PushAnswer{Action: "push", State: "off"}},
	} {
		code, body := post(t, h, "/control/push?"+c.query, "")
		var a admin.PushAnswer
		if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || a != c.want {
			t.Errorf("push?%s: %d %s; want %+v", c.query, code, body, c.want)
		}
	}
	if got := m.Snapshot().Controls["push"]; got != 3 {
		t.Errorf("controls push = %d, want 3", got)
	}
	for _, c := range []struct{ query, names string }{
		{"", "state"}, {"state=maybe", "state"}, {"state=on&interval=0s", "interval"}, {"state=on&interval=2h", "interval"},
		{"state=on&interval=fast", "interval"}, {"state=on&size=0", "size"}, {"state=on&size=2000000", "size"},
	} {
		if code, body := post(t, h, "/control/push?"+c.query, ""); code != 400 || !strings.Contains(body, "invalid value for "+c.names) {
			t.Errorf("push?%s: %d %q; want 400 naming %s", c.query, code, body, c.names)
		}
	}
	h = admin.Handler(settings.Admin(cfg, protocol.About{}, &dropper{}), nil, nil, nil)
	if code, _ := post(t, h, "/control/push?state=on", ""); code != http.StatusNotImplemented {
		t.Errorf("push on a target without one: %d, want 501", code)
	}
}

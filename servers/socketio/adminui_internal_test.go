package socketio

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/metrics/metricstest"
)

// fakeEngine is an engine of Admin UI sockets numbered 1, 2...
type fakeEngine struct {
	mu       sync.Mutex
	got      map[int][]string // each admin's events, with their arguments
	backlogs map[int]int
	orders   []string
	gate     chan struct{} // when set, emitAdmin waits on it
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{got: map[int][]string{}, backlogs: map[int]int{}}
}

func (f *fakeEngine) emitAdmin(s int, event string, args []json.RawMessage) {
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	b.WriteString(event)
	for _, a := range args {
		b.WriteString(" " + string(a))
	}
	f.got[s] = append(f.got[s], b.String())
}

func (f *fakeEngine) events(s int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got[s])
}

func (f *fakeEngine) backlog(s int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.backlogs[s]
}

func (f *fakeEngine) clients() (int, int) { return 3, 1 }

func (f *fakeEngine) namespaces() []adminNamespaceStats {
	return []adminNamespaceStats{{Name: "/", SocketsCount: 3}}
}

func (f *fakeEngine) sockets(max int) []adminSocket {
	return []adminSocket{{ID: "a", Nsp: "/", Rooms: []string{"a"}}}[:min(max, 1)]
}

func (f *fakeEngine) order(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.orders = append(f.orders, fmt.Sprintf(format, args...))
}

func (f *fakeEngine) disconnect(nsp, filter string, close bool) {
	f.order("disconnect %s %q %v", nsp, filter, close)
}
func (f *fakeEngine) join(nsp, filter, room string)  { f.order("join %s %q %s", nsp, filter, room) }
func (f *fakeEngine) leave(nsp, filter, room string) { f.order("leave %s %q %s", nsp, filter, room) }
func (f *fakeEngine) emitTo(nsp, filter, event string, args []json.RawMessage) int {
	f.order("emit %s %q %s %s", nsp, filter, event, args)
	return 2
}

func newTestHub(t *testing.T) (*adminHub[int], *fakeEngine, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	f := newFakeEngine()
	h := newAdminHub[int](f, metrics.New(reg, "empty"))
	t.Cleanup(h.close)
	return h, f, reg
}

// dropped is knowngood_admin_ui_dropped_total{reason}.
func dropped(t *testing.T, reg *prometheus.Registry, reason string) int {
	t.Helper()
	return metricstest.Counter(t, reg, "knowngood_admin_ui_dropped_total", "reason", reason)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("no %s within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAdminHubGreets: an Admin UI gets config and all_sockets, then the
// notes made after it connected; none are made before one is, and none
// after the last has gone.
func TestAdminHubGreets(t *testing.T) {
	h, f, _ := newTestHub(t)
	h.roomJoined("/", "r", "a") // no Admin UI: no note
	if h.queued.Load() != 0 || h.watching() {
		t.Fatal("a note was made with no Admin UI connected")
	}
	h.adminConnected(1)
	waitFor(t, "the greeting", func() bool { return len(f.events(1)) == 2 })
	got := f.events(1)
	if !strings.HasPrefix(got[0], `config {"supportedFeatures":["EMIT","JOIN","LEAVE","DISCONNECT","MJOIN","MLEAVE","MDISCONNECT","AGGREGATED_EVENTS","ALL_EVENTS"]}`) ||
		!strings.HasPrefix(got[1], `all_sockets [{"id":"a","clientId":"","transport":"","nsp":"/","data":{},"handshake":{`) {
		t.Errorf("greeting %q", got)
	}
	h.socketDisconnected("/", "a", "transport close")
	waitFor(t, "the note", func() bool { return len(f.events(1)) == 3 })
	if got := f.events(1)[2]; !strings.HasPrefix(got, `socket_disconnected "/" "a" "transport close" "20`) {
		t.Errorf("note %q", got)
	}
	h.adminLeft(1)
	h.roomLeft("/", "r", "a")
	if h.queued.Load() != 0 || h.watching() {
		t.Error("a note was made after the last Admin UI left")
	}
}

// TestAdminHubBounded: notes wait in a queue of at most maxAdminNotes
// while the Admin UI's socket is slow to take them; more are dropped and
// counted, and what was queued arrives once it takes them again.
func TestAdminHubBounded(t *testing.T) {
	h, f, reg := newTestHub(t)
	h.adminConnected(1)
	waitFor(t, "the greeting", func() bool { return len(f.events(1)) == 2 })
	f.gate = make(chan struct{})
	const n = 3 * maxAdminNotes
	h.roomJoined("/", "r", "first") // the flush that takes it waits at the gate
	waitFor(t, "the flush", func() bool { return h.queued.Load() == 0 })
	for i := range n {
		h.roomJoined("/", "r", fmt.Sprint(i))
		if q := h.queued.Load(); q > maxAdminNotes {
			t.Fatalf("%d notes queued, past the bound of %d", q, maxAdminNotes)
		}
	}
	if d := dropped(t, reg, metrics.AdminUIQueueFull); d != n-maxAdminNotes {
		t.Errorf("%d dropped for a full queue, want %d", d, n-maxAdminNotes)
	}
	close(f.gate)
	waitFor(t, "the notes queued", func() bool { return len(f.events(1)) == 2+1+maxAdminNotes })

	// A note is bounded in bytes too.
	big := json.RawMessage(`"` + strings.Repeat("x", maxAdminNoteBytes) + `"`)
	h.note("event_received", big)
	if d := dropped(t, reg, metrics.AdminUIQueueFull); d != n-maxAdminNotes+1 {
		t.Errorf("a note of %d bytes was queued", len(big))
	}
}

// TestAdminHubSlowReader: an Admin UI whose session holds maxAdminBacklog
// packets unwritten gets no notes or server_stats (dropped, counted); the
// others get them.
func TestAdminHubSlowReader(t *testing.T) {
	h, f, reg := newTestHub(t)
	h.adminConnected(1)
	h.adminConnected(2)
	waitFor(t, "the greetings", func() bool { return len(f.events(1)) == 2 && len(f.events(2)) == 2 })
	f.mu.Lock()
	f.backlogs[1] = maxAdminBacklog
	f.mu.Unlock()
	h.roomJoined("/", "r", "a")
	h.roomLeft("/", "r", "a")
	waitFor(t, "the notes", func() bool { return len(f.events(2)) == 4 })
	h.emitStats()
	if got := f.events(1); len(got) != 2 {
		t.Errorf("the slow Admin UI got %q", got[2:])
	}
	if got := f.events(2); len(got) != 5 || !strings.HasPrefix(got[4], `server_stats {"serverId":`) {
		t.Errorf("the other got %q", got)
	}
	if d := dropped(t, reg, metrics.AdminUISlowReader); d != 3 {
		t.Errorf("%d dropped for a slow reader, want 3 (two notes, a server_stats)", d)
	}
}

// TestAdminStats: server_stats as instrument sends it.
func TestAdminStats(t *testing.T) {
	h, f, _ := newTestHub(t)
	h.adminConnected(1)
	waitFor(t, "the greeting", func() bool { return len(f.events(1)) == 2 })
	h.counts.opened()
	h.counts.in(10)
	h.emitStats()
	got := strings.TrimPrefix(f.events(1)[2], "server_stats ")
	var st map[string]any
	if err := json.Unmarshal([]byte(got), &st); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"serverId", "hostname", "pid", "uptime", "clientsCount", "pollingClientsCount", "aggregatedEvents", "namespaces"} {
		if _, ok := st[k]; !ok {
			t.Errorf("server_stats has no %s: %s", k, got)
		}
	}
	if st["clientsCount"] != 3.0 || st["pollingClientsCount"] != 1.0 || !strings.Contains(got, `"namespaces":[{"name":"/","socketsCount":3}]`) ||
		!strings.Contains(got, `"type":"rawConnection","count":1}`) || !strings.Contains(got, `"type":"bytesIn","count":10}`) {
		t.Errorf("server_stats %s", got)
	}
}

// TestAdminOrders: the orders as instrument reads them on Socket.IO 4.
func TestAdminOrders(t *testing.T) {
	h, f, _ := newTestHub(t)
	raw := func(args ...any) []json.RawMessage {
		out := make([]json.RawMessage, len(args))
		for i, a := range args {
			out[i] = mustJSON(a)
		}
		return out
	}
	for _, o := range []adminOrder{
		{"_disconnect", raw("/", true, "room-1")},
		{"_disconnect", raw("/chat", false)},
		{"join", raw("/", "r", "id")},
		{"join", raw("/", "r")},
		{"leave", raw("/", "r", nil)},
		{"emit", raw("/", nil, "ev", 1, map[string]int{"a": 2})},
		{"emit", raw("/", "room")},           // no event: ignored
		{"join", raw("/")},                   // no room: ignored
		{"_disconnect", raw("/admin", true)}, // the Admin UI's own: ignored
		{"_disconnect", raw()},               // no namespace: ignored
		{"other", raw("/", "x")},             // not an order
	} {
		h.carryOut(o)
	}
	want := []string{
		`disconnect / "room-1" true`, `disconnect /chat "" false`, `join / "id" r`, `join / "" r`, `leave / "" r`,
		`emit / "" ev [1 {"a":2}]`,
	}
	if !slices.Equal(f.orders, want) {
		t.Errorf("orders carried out:\n%q\nwant\n%q", f.orders, want)
	}
}

func TestAdminCounts(t *testing.T) {
	var c adminCounts
	c.reasons = map[string]int64{}
	for range 3 {
		c.opened()
	}
	c.adminSession()
	c.in(10)
	c.in(0) // not a message packet
	c.out(5)
	c.closed("transport close")
	c.closed("transport close")
	c.closed("ping timeout")
	now := time.Unix(1000, 500e6)
	got := mustJSON(c.take(now))
	want := `[{"timestamp":1000000,"type":"rawConnection","count":2},` +
		`{"timestamp":1000000,"type":"rawDisconnection","subType":"ping timeout","count":1},` +
		`{"timestamp":1000000,"type":"rawDisconnection","subType":"transport close","count":2},` +
		`{"timestamp":1000000,"type":"packetsIn","count":1},{"timestamp":1000000,"type":"packetsOut","count":1},` +
		`{"timestamp":1000000,"type":"bytesIn","count":10},{"timestamp":1000000,"type":"bytesOut","count":5}]`
	if string(got) != want {
		t.Errorf("take:\n%s\nwant\n%s", got, want)
	}
	if got := mustJSON(c.take(now)); string(got) != `[]` {
		t.Errorf("a second take: %s, want []", got)
	}
	// An Admin UI's open taken back after it was taken: the next is one less.
	c.adminSession()
	c.take(now)
	c.opened()
	c.opened()
	if got := mustJSON(c.take(now)); !strings.Contains(string(got), `"rawConnection","count":1}`) {
		t.Errorf("after a take-back: %s", got)
	}
	for i := range 2 * maxDisconnectReasons {
		c.closed(fmt.Sprint("reason ", i))
	}
	if n := len(c.take(now)); n != maxDisconnectReasons+1 {
		t.Errorf("%d entries for %d reasons, want %d and other", n, 2*maxDisconnectReasons, maxDisconnectReasons)
	}
}

func TestSessionKind(t *testing.T) {
	var user, admin, late, closed sessionKind
	if user.firstConnect("/") || user.firstConnect(adminNamespace) || user.admin() || user.close() {
		t.Error("a session whose first CONNECT is / became the Admin UI's")
	}
	if !admin.firstConnect(adminNamespace) || !admin.admin() || admin.firstConnect(adminNamespace) || !admin.close() || admin.admin() {
		t.Error("a session whose first CONNECT is /admin is not the Admin UI's, once, until it closes")
	}
	late.legacy() // Engine.IO v3: / joined at the open
	if late.firstConnect(adminNamespace) {
		t.Error("a v3 session became the Admin UI's")
	}
	if closed.close() || closed.firstConnect(adminNamespace) {
		t.Error("a closed session became the Admin UI's")
	}
}

func TestConnectNamespace(t *testing.T) {
	for packet, want := range map[string]string{
		"0": "/", `0{"token":1}`: "/", "0/admin,": "/admin", `0/admin,{"a":1}`: "/admin", "0/admin": "/admin", "0/chat,{}": "/chat",
	} {
		if got := connectNamespace([]byte(packet)); got != want {
			t.Errorf("%q: %q, want %q", packet, got, want)
		}
	}
}

func TestEventJSON(t *testing.T) {
	args := []any{"a", map[string]any{"x": []byte{1}, "y": []any{[]byte{2}, 3.0}}, []byte{3}, 4.0}
	got := eventJSON("ev", args)
	want := `["ev","a",{"x":{"_placeholder":true,"num":0},"y":[{"_placeholder":true,"num":1},3]},{"_placeholder":true,"num":2},4]`
	if string(got) != want {
		t.Errorf("eventJSON:\n%s\nwant\n%s", got, want)
	}
	if _, ok := args[1].(map[string]any)["x"].([]byte); !ok {
		t.Error("eventJSON changed its arguments")
	}
	if got := nativeEventJSON("ev", []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`{"_placeholder":true,"num":0}`)}); string(got) != `["ev",1,{"_placeholder":true,"num":0}]` {
		t.Errorf("nativeEventJSON: %s", got)
	}
}

func TestNewAdminHandshake(t *testing.T) {
	h := http.Header{"User-Agent": {"ua"}, "Origin": {"http://x"}, "X-Forwarded-For": {"10.0.0.1"}, "Accept": {"a", "b"}}
	issued := time.Date(2026, 12, 7, 4, 1, 27, 577e6, time.UTC)
	hs := newAdminHandshake("127.0.0.1:5555", h, "/socket.io/?EIO=4&transport=polling&t=x&t=y", issued, true)
	got := string(mustJSON(hs))
	want := `{"address":"10.0.0.1","headers":{"accept":"a, b","origin":"http://x","user-agent":"ua","x-forwarded-for":"10.0.0.1"},` +
		`"query":{"EIO":"4","t":["x","y"],"transport":"polling"},"issued":1796616087577,"secure":true,` +
		`"time":"Mon Dec 07 2026 04:01:27 GMT+0000 (UTC)","url":"/socket.io/?EIO=4&transport=polling&t=x&t=y","xdomain":true}`
	if got != want {
		t.Errorf("handshake:\n%s\nwant\n%s", got, want)
	}
	if hs := newAdminHandshake("[::1]:5555", nil, "/", issued, false); hs.Address != "::1" || hs.Xdomain {
		t.Errorf("handshake %+v: want address ::1, not cross-domain", hs)
	}
}

package servers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/browser"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// The Socket.IO Admin UI (-admin-ui) against the targets: the official
// socket.io-client on /admin (scripts/clients/sio-admin.mjs) and the UI's
// own page in Chromium, with user sockets of the official client
// (scripts/clients/sio-users.mjs) for them to watch.

// nodeRun is a running Node client script that prints one JSON line per
// thing it sees and reads orders on its standard input.
type nodeRun struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan json.RawMessage

	mu   sync.Mutex
	seen []json.RawMessage // every line, for a failure's message
}

// startClient runs a script of scripts/clients; it is ended (its standard
// input closed, then killed) when the test ends.
func startClient(t *testing.T, script string, args ...string) *nodeRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", append([]string{"../scripts/clients/" + script}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &nodeRun{name: script, cmd: cmd, stdin: stdin, lines: make(chan json.RawMessage, 100000)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(r.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := json.RawMessage(slices.Clone(sc.Bytes()))
			r.mu.Lock()
			r.seen = append(r.seen, line)
			r.mu.Unlock()
			select {
			case r.lines <- line:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cancel()
			<-done
		}
		cancel()
		<-read
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s stderr: %s", script, stderr.String())
		}
	})
	return r
}

// send writes one JSON line to the script.
func (r *nodeRun) send(t *testing.T, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := r.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
}

// await reads lines until one that match accepts (decoded into a T), for
// up to timeout.
func await[T any](t *testing.T, r *nodeRun, what string, timeout time.Duration, match func(T) bool) T {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("%s ended before %s; it printed:\n%s", r.name, what, r.printed())
			}
			var v T
			if json.Unmarshal(line, &v) == nil && match(v) {
				return v
			}
		case <-deadline.C:
			t.Fatalf("no %s from %s within %s; it printed:\n%s", what, r.name, timeout, r.printed())
		}
	}
}

func (r *nodeRun) printed() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, l := range r.seen[max(0, len(r.seen)-40):] {
		fmt.Fprintf(&b, "%.400s\n", l)
	}
	return b.String()
}

// adminEvent is a line of sio-admin.mjs.
type adminEvent struct {
	Event string            `json:"event"`
	Args  []json.RawMessage `json:"args"`
}

// arg decodes argument i into v; false when it is not there or not one.
func (e adminEvent) arg(i int, v any) bool {
	return i < len(e.Args) && json.Unmarshal(e.Args[i], v) == nil
}

func (e adminEvent) str(i int) string {
	var s string
	e.arg(i, &s)
	return s
}

// usersReady is sio-users.mjs's first line.
type usersReady struct {
	Ready bool
	IDs   []string
	Rooms map[string]string
}

// userLine is one of sio-users.mjs's later lines.
type userLine struct {
	ID         string
	Event      string
	Args       []json.RawMessage
	Disconnect string
}

// The Admin UI's socket as instrument serializes it, in what the tests
// read of it.
type adminSocketJSON struct {
	ID, ClientID, Transport, Nsp string
	Data                         map[string]any
	Handshake                    struct {
		Address string
		Headers map[string]string
		Query   map[string]any
		Issued  int64
		Secure  bool
		Time    string
		URL     string
		Xdomain bool
	}
	Rooms []string
}

type serverStatsJSON struct {
	ServerID            string
	Hostname            string
	Pid                 int
	Uptime              float64
	ClientsCount        int
	PollingClientsCount int
	AggregatedEvents    []struct {
		Timestamp int64
		Type      string
		SubType   string
		Count     int
	}
	Namespaces []namespaceJSON
}

type namespaceJSON struct {
	Name         string
	SocketsCount int
}

// adminCases are the targets the Admin UI is checked against: every
// engine, every transport it serves, the default path and another.
var adminCases = []struct {
	name, engine, transports, path string
}{
	{"zishang520", "zishang520", "polling,websocket", ""},
	{"zishang520-websocket-path", "zishang520", "websocket", "/custom/sio/"},
	{"zishang520-polling", "zishang520", "polling", ""},
	{"native", "native", "polling,websocket", "/custom/sio/"},
	{"native-polling", "native", "polling", ""},
	{"native-websocket", "native", "websocket", ""},
	{"native-gnet", nativeGnet, "websocket", "/custom/sio/"},
}

// adminTarget starts a target with -admin-ui on engine (and -path).
func adminTarget(t *testing.T, engine, path string, extra ...string) *server {
	args := append(engineFlags(engine), "-variant", "empty", "-admin-ui")
	if path != "" {
		args = append(args, "-path", path)
	}
	return startServer(t, append(args, extra...)...)
}

func pathOr(path string) string {
	if path == "" {
		return "/socket.io/"
	}
	return path
}

// TestAdminUINamespace: on each engine, transport and path, the official
// socket.io-client on /admin gets what instrument(io, {auth: false})
// sends: config, all_sockets, server_stats every two seconds, and a
// notification for each socket that connects, upgrades, joins or leaves a
// room, sends or is sent an event, and disconnects; its orders
// (_disconnect, join, leave, emit) reach the user sockets. Its own socket
// and session are in no list, count or figure.
func TestAdminUINamespace(t *testing.T) {
	t.Parallel()
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	for _, c := range adminCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testAdminUINamespace(t, c.engine, c.transports, pathOr(c.path))
		})
	}
}

func testAdminUINamespace(t *testing.T, engine, transports, path string) {
	s := adminTarget(t, engine, path, "-emit-auth")
	const wait = 20 * time.Second
	adminTransports := transports
	admin := startClient(t, "sio-admin.mjs", "--url", s.url, "--path", path, "--transports", adminTransports)
	adminID := await(t, admin, "connect", wait, func(e adminEvent) bool { return e.Event == "connect" }).str(0)
	cfg := await(t, admin, "config", wait, func(e adminEvent) bool { return e.Event == "config" })
	var features struct{ SupportedFeatures []string }
	cfg.arg(0, &features)
	if want := []string{"EMIT", "JOIN", "LEAVE", "DISCONNECT", "MJOIN", "MLEAVE", "MDISCONNECT", "AGGREGATED_EVENTS", "ALL_EVENTS"}; !slices.Equal(features.SupportedFeatures, want) {
		t.Errorf("config: %s, want supportedFeatures %v", cfg.Args, want)
	}
	var none []adminSocketJSON
	if all := await(t, admin, "all_sockets", wait, func(e adminEvent) bool { return e.Event == "all_sockets" }); !all.arg(0, &none) || len(none) != 0 {
		t.Errorf("all_sockets with no user socket: %s (the Admin UI's own socket is not one)", all.Args)
	}
	before := s.stats(t)

	// Six user sockets: 0-3 join room-0 and room-1, 0-1 talk.
	const n = 6
	users := startClient(t, "sio-users.mjs", "--url", s.url, "--path", path, "--transports", transports, "--n", fmt.Sprint(n),
		"--rooms", "2", "--talkers", "2", "--every-ms", "100")
	ready := await(t, users, "ready", wait, func(r usersReady) bool { return r.Ready })
	ids := ready.IDs

	connected := map[string]adminSocketJSON{}
	joined := map[string]bool{}
	var talked, updated, authSent bool
	await(t, admin, "the notifications of the user sockets", wait, func(e adminEvent) bool {
		switch e.Event {
		case "socket_connected":
			var sock adminSocketJSON
			var at string
			if e.arg(0, &sock) && e.arg(1, &at) {
				connected[sock.ID] = sock
				if _, err := time.Parse(time.RFC3339, at); err != nil {
					t.Errorf("socket_connected's time %q: %v", at, err)
				}
			}
		case "room_joined":
			joined[e.str(1)+" "+e.str(2)] = true
		case "event_received":
			var ev []json.RawMessage
			if e.arg(2, &ev) && len(ev) == 2 && string(ev[0]) == `"chat:message"` && slices.Contains(ids[:2], e.str(1)) {
				talked = true
			}
		case "event_sent":
			var ev []json.RawMessage
			authSent = authSent || e.arg(2, &ev) && len(ev) == 2 && string(ev[0]) == `"auth"` && string(ev[1]) == `{}`
		case "socket_updated":
			var u struct{ ID, Nsp, Transport string }
			updated = updated || e.arg(0, &u) && slices.Contains(ids, u.ID) && u.Nsp == "/" && u.Transport == "websocket"
		}
		for i, id := range ids {
			if _, ok := connected[id]; !ok || !joined[id+" "+id] || i < 4 && !joined[fmt.Sprintf("room-%d %s", i%2, id)] {
				return false
			}
		}
		return talked && authSent && (updated || transports != "polling,websocket")
	})
	for _, id := range ids {
		checkAdminSocket(t, connected[id], id, path, transports)
	}

	// server_stats: the user sessions, not the Admin UI's.
	stats := await(t, admin, "server_stats", wait, func(e adminEvent) bool {
		var st serverStatsJSON
		return e.Event == "server_stats" && e.arg(0, &st) && st.ClientsCount == n
	})
	var st serverStatsJSON
	stats.arg(0, &st)
	host, _ := os.Hostname()
	if st.ServerID != host || st.Hostname != host || st.Pid <= 0 || st.Uptime <= 0 {
		t.Errorf("server_stats %s: want serverId and hostname %q, a pid and an uptime", stats.Args, host)
	}
	wantPolling := 0
	if transports == "polling" {
		wantPolling = n
	}
	if st.PollingClientsCount != wantPolling {
		t.Errorf("pollingClientsCount %d, want %d", st.PollingClientsCount, wantPolling)
	}
	nsps := map[string]int{}
	for _, ns := range st.Namespaces {
		nsps[ns.Name] = ns.SocketsCount
	}
	if nsps["/"] != n || nsps["/custom"] != 0 || len(nsps) != 2 {
		t.Errorf("namespaces %v, want / with %d sockets and /custom (not /admin)", st.Namespaces, n)
	}
	types := map[string]int{}
	for _, e := range st.AggregatedEvents {
		types[e.Type] += e.Count
		if e.Timestamp%1000 != 0 || e.Count <= 0 {
			t.Errorf("aggregatedEvents entry %+v: want a second's timestamp and a count", e)
		}
	}
	for _, typ := range []string{"packetsIn", "bytesIn"} {
		if types[typ] == 0 {
			t.Errorf("aggregatedEvents %+v: no %s while two sockets talk", st.AggregatedEvents, typ)
		}
	}

	// A second Admin UI lists every user socket, and not the first's.
	second := startClient(t, "sio-admin.mjs", "--url", s.url, "--path", path, "--transports", adminTransports)
	all := await(t, second, "all_sockets", wait, func(e adminEvent) bool { return e.Event == "all_sockets" })
	var listed []adminSocketJSON
	all.arg(0, &listed)
	var listedIDs []string
	for _, sock := range listed {
		listedIDs = append(listedIDs, sock.ID)
		checkAdminSocket(t, sock, sock.ID, path, transports)
	}
	slices.Sort(listedIDs)
	if want := slices.Sorted(slices.Values(ids)); !slices.Equal(listedIDs, want) || slices.Contains(listedIDs, adminID) {
		t.Errorf("all_sockets lists %v, want the users' %v", listedIDs, want)
	}
	_ = second.stdin.Close()

	// The orders, as the UI gives them.
	admin.send(t, map[string]any{"emit": "join", "args": []any{"/", "extra", ids[4]}})
	await(t, admin, "room_joined extra", wait, func(e adminEvent) bool {
		return e.Event == "room_joined" && e.str(0) == "/" && e.str(1) == "extra" && e.str(2) == ids[4]
	})
	admin.send(t, map[string]any{"emit": "emit", "args": []any{"/", "extra", "from-admin", map[string]int{"x": 1}}})
	got := await(t, users, "the admin's emit", wait, func(l userLine) bool { return l.Event == "from-admin" })
	if got.ID != ids[4] || len(got.Args) != 1 || string(got.Args[0]) != `{"x":1}` {
		t.Errorf("the admin's emit to room extra reached %+v, want %s with {\"x\":1}", got, ids[4])
	}
	admin.send(t, map[string]any{"emit": "leave", "args": []any{"/", "extra", ids[4]}})
	await(t, admin, "room_left extra", wait, func(e adminEvent) bool {
		return e.Event == "room_left" && e.str(1) == "extra" && e.str(2) == ids[4]
	})
	admin.send(t, map[string]any{"emit": "_disconnect", "args": []any{"/", false, ids[5]}})
	gone := await(t, admin, "socket_disconnected", wait, func(e adminEvent) bool {
		return e.Event == "socket_disconnected" && e.str(1) == ids[5]
	})
	// socket.io-client closes its Manager's transport as soon as the
	// server disconnects its only socket; zishang520 runs the socket's own
	// close on its task queue, so on a loaded machine that transport close
	// can reach it first, and the socket ends with that reason (Node closes
	// the socket before it reads anything more).
	if reason := gone.str(2); gone.str(0) != "/" || (reason != "server namespace disconnect" && !(engine == config.EngineZishang520 && reason == "transport close")) {
		t.Errorf("socket_disconnected %s, want / %s server namespace disconnect", gone.Args, ids[5])
	}
	if l := await(t, users, "the disconnect", wait, func(l userLine) bool { return l.Disconnect != "" }); l.ID != ids[5] || l.Disconnect != "io server disconnect" {
		t.Errorf("the user sockets saw %+v, want %s io server disconnect", l, ids[5])
	}
	// _disconnect with close ends the session: a room of several.
	admin.send(t, map[string]any{"emit": "_disconnect", "args": []any{"/", true, "room-1"}})
	closed := map[string]bool{}
	await(t, users, "the sessions of room-1 closed", wait, func(l userLine) bool {
		if l.Disconnect != "" {
			closed[l.ID] = true
		}
		return closed[ids[1]] && closed[ids[3]]
	})
	if len(closed) != 2 {
		t.Errorf("closing room-1 disconnected %v, want %s and %s", closed, ids[1], ids[3])
	}
	admin.send(t, map[string]any{"emit": "_disconnect", "args": []any{"/admin", true}})         // not a user namespace: ignored
	admin.send(t, map[string]any{"emit": "_disconnect", "args": []any{"/nowhere", false, "x"}}) // no such namespace: ignored
	// Three sessions ended: socket.io-client closes one whose only socket
	// the server disconnected.
	const left = n - 3
	await(t, admin, "server_stats after the orders", wait, func(e adminEvent) bool {
		var st serverStatsJSON
		return e.Event == "server_stats" && e.arg(0, &st) && st.ClientsCount == left
	})

	// The Admin UI counts in none of the target's figures but
	// connections_total.
	after := s.stats(t)
	if after.ConnectionsActive != left {
		t.Errorf("connections_active %d with %d user sessions and an Admin UI", after.ConnectionsActive, left)
	}
	if ok := after.Handshakes[protocol.ResultOK] - before.Handshakes[protocol.ResultOK]; ok != n {
		t.Errorf("%d handshakes ok after %d user sockets and two Admin UIs, want %d", ok, n, n)
	}
	if c := after.Namespaces["/admin"]; c != 0 {
		t.Errorf("namespace_connects /admin = %d, want 0", c)
	}
	if m := scrape(t, s.admin+"/metrics"); !strings.Contains(m, `knowngood_admin_ui_sessions_total{transport=`) {
		t.Errorf("/metrics has no knowngood_admin_ui_sessions_total:\n%s", m)
	}

	// A namespace made by a client's CONNECT is followed too.
	chat := startClient(t, "sio-users.mjs", "--url", s.url, "--path", path, "--transports", transports, "--n", "1",
		"--rooms", "0", "--talkers", "0", "--namespace", "/chat")
	chatID := await(t, chat, "ready", wait, func(r usersReady) bool { return r.Ready }).IDs[0]
	await(t, admin, "socket_connected on /chat", wait, func(e adminEvent) bool {
		var sock adminSocketJSON
		return e.Event == "socket_connected" && e.arg(0, &sock) && sock.ID == chatID && sock.Nsp == "/chat"
	})
	await(t, admin, "server_stats with /chat", wait, func(e adminEvent) bool {
		var st serverStatsJSON
		if e.Event != "server_stats" || !e.arg(0, &st) {
			return false
		}
		return slices.Contains(st.Namespaces, namespaceJSON{"/chat", 1})
	})
}

// checkAdminSocket: a user socket as instrument serializes it.
func checkAdminSocket(t *testing.T, sock adminSocketJSON, id, path, transports string) {
	t.Helper()
	hs := sock.Handshake
	first := strings.Split(transports, ",")[0]
	switch {
	case sock.ID != id || sock.Nsp != "/" || len(sock.ClientID) != 12 || sock.Data == nil:
		t.Errorf("socket %+v: want id %s, nsp /, a 12-character clientId, data {}", sock, id)
	case sock.Transport != first && sock.Transport != "websocket":
		t.Errorf("socket %s: transport %q, want %s", id, sock.Transport, transports)
	case hs.Address != "127.0.0.1" || hs.Issued <= 0 || hs.Time == "" || !strings.HasPrefix(hs.URL, path+"?") || hs.Query["EIO"] != "4" || hs.Headers == nil:
		t.Errorf("socket %s: handshake %+v: want address 127.0.0.1, issued, time, url under %s, query EIO=4, headers", id, hs, path)
	case len(sock.Rooms) == 0 || sock.Rooms[0] != id:
		t.Errorf("socket %s: rooms %v, its own first", id, sock.Rooms)
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestAdminUICORS: with -admin-ui the target answers the admin
// listener's origin by name, with credentials, as the UI's
// socket.io-client (withCredentials) needs on polling, and lets it open
// a session where -origin would refuse it; any other origin is answered
// as before.
func TestAdminUICORS(t *testing.T) { forEngines(t, testAdminUICORS) }

func testAdminUICORS(t *testing.T, engine string) {
	s := adminTarget(t, engine, "", "-origin", "http://app.example")
	page := "http://" + s.AdminAddr
	open := s.url + "/socket.io/?EIO=4&transport=polling"
	ask := func(method, origin string) *http.Response {
		req, _ := http.NewRequest(method, open, nil)
		req.Header.Set("Origin", origin)
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "GET")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, method := range []string{http.MethodOptions, http.MethodGet} {
		resp := ask(method, page)
		if resp.StatusCode >= 300 || resp.Header.Get("Access-Control-Allow-Origin") != page || resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
			t.Errorf("%s from the admin listener's page (%s): %d, allow-origin %q, credentials %q; want it named, with credentials",
				method, page, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Credentials"))
		}
	}
	if resp := ask(http.MethodGet, "http://app.example"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET from -origin's origin: %d, want 200", resp.StatusCode)
	}
	if resp := ask(http.MethodGet, "http://evil.example"); resp.StatusCode == http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") == "http://evil.example" {
		t.Errorf("GET from another origin: %d, allow-origin %q; want it refused", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	other := strings.Replace(page, "127.0.0.1", "10.9.9.9", 1)
	if resp := ask(http.MethodGet, other); resp.StatusCode == http.StatusOK {
		t.Errorf("GET from %s (the admin port on another host, the listener on loopback): %d; want it refused", other, resp.StatusCode)
	}
}

// TestAdminUIBrowser: the UI's own page, served by the admin listener,
// in Chromium, connects to a target under load (tens of sockets of the
// official client, some in rooms, some talking) on each engine and shows
// its sockets: their count, and their ids. ADMINUI_SCREENSHOT=DIR keeps
// a picture of each page.
func TestAdminUIBrowser(t *testing.T) {
	t.Parallel()
	need(t, "socket.io-client (scripts/node_modules)", haveNodeClients())
	b := browser.For(t)
	for _, c := range []struct{ engine, transports, path string }{
		{"zishang520", "polling,websocket", ""},
		{"native", "polling,websocket", "/custom/sio/"},
		{nativeGnet, "websocket", ""},
	} {
		t.Run(c.engine, func(t *testing.T) {
			t.Parallel()
			path := pathOr(c.path)
			s := adminTarget(t, c.engine, c.path)
			const n = 40
			users := startClient(t, "sio-users.mjs", "--url", s.url, "--path", path, "--transports", c.transports, "--n", fmt.Sprint(n),
				"--rooms", "5", "--talkers", "10", "--every-ms", "50")
			ready := await(t, users, "ready", 30*time.Second, func(r usersReady) bool { return r.Ready })

			p := b.Open(t, s.admin+"/admin-ui/")
			// The page connects on its own: the admin listener filled its
			// form with the target's address and path.
			p.WaitFor(t, "the connection", `/Status:\s*CONNECTED/.test(document.body.innerText)`, 30*time.Second)
			if got := browser.Eval[string](t, p, `document.querySelector("code") ? document.querySelector("code").innerText : ""`); got != s.url {
				t.Errorf("the page shows server URL %q, want %q", got, s.url)
			}
			// The dashboard: the namespace's sockets.
			p.WaitFor(t, fmt.Sprintf("namespace / with %d sockets", n), fmt.Sprintf(`[...document.querySelectorAll("tr")].some(r => r.cells.length == 2 && r.cells[0].innerText.trim() == "/" && r.cells[1].innerText.trim() == "%d")`, n), 30*time.Second)
			shot(t, p, c.engine+"-dashboard")
			// The servers: this process, its clients (the page's own
			// session is not one).
			browser.Eval[string](t, p, `location.hash = "#/servers"`)
			p.WaitFor(t, "the server's row", fmt.Sprintf(`[...document.querySelectorAll("tbody tr")].some(r => r.cells.length > 4 && r.cells[1].innerText.trim() == %s && r.cells[4].innerText.trim() == "%d")`, jsString(hostOf(t)), n), 30*time.Second)
			// The sockets: their count, and the ids the clients printed.
			browser.Eval[string](t, p, `location.hash = "#/sockets"`)
			p.WaitFor(t, fmt.Sprintf("%d sockets", n), fmt.Sprintf(`/ of %d\b/.test(document.body.innerText)`, n), 30*time.Second)
			// The pages seen before stay in the document, hidden: the
			// rows whose first cell is a socket id are this one's.
			shown := browser.Eval[[]string](t, p, `[...document.querySelectorAll("tbody tr")].map(r => r.cells[0].innerText.trim()).filter(s => /^[\w-]{16,}$/.test(s))`)
			var strangers []string
			for _, id := range shown {
				if !slices.Contains(ready.IDs, id) {
					strangers = append(strangers, id)
				}
			}
			if len(shown) == 0 || len(strangers) > 0 {
				t.Errorf("the sockets page lists %v; want ids the clients printed (%v), and no other", shown, ready.IDs)
			}
			shot(t, p, c.engine+"-sockets")
			if st := s.stats(t); st.ConnectionsActive != n {
				t.Errorf("connections_active %d with %d user sockets and the Admin UI's page open, want %d", st.ConnectionsActive, n, n)
			}
			if len(shown) == 0 {
				return
			}
			// The row's button: the UI's _disconnect order.
			victim := shown[0]
			browser.Eval[bool](t, p, `[...document.querySelectorAll("tbody tr")].find(r => r.cells[0].innerText.trim() == `+jsString(victim)+`).querySelector("button").click() || true`)
			if l := await(t, users, "the disconnect", 30*time.Second, func(l userLine) bool { return l.Disconnect != "" }); l.ID != victim || l.Disconnect != "io server disconnect" {
				t.Errorf("after a click on %s's disconnect button the clients saw %+v, want it disconnected by the server", victim, l)
			}
			// The click reaches the row too, which opens the socket's page:
			// it says the socket is gone, and the list has one less.
			p.WaitFor(t, "the socket's page", `/Status\s*DISCONNECTED/.test(document.body.innerText) && document.body.innerText.includes(`+jsString(victim)+`)`, 30*time.Second)
			browser.Eval[string](t, p, `location.hash = "#/sockets"`)
			p.WaitFor(t, fmt.Sprintf("%d sockets", n-1), fmt.Sprintf(`/ of %d\b/.test(document.body.innerText)`, n-1), 30*time.Second)
			p.NoProblems(t)
		})
	}
}

// shot keeps a picture of the page in ADMINUI_SCREENSHOT, if set.
func shot(t *testing.T, p *browser.Page, name string) {
	if dir := os.Getenv("ADMINUI_SCREENSHOT"); dir != "" {
		p.Screenshot(t, filepath.Join(dir, "adminui-"+name+".png"))
	}
}

func hostOf(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

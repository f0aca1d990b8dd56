package socketio

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knowngood/knowngood/shared/metrics"
)

// The Socket.IO Admin UI (-admin-ui): the /admin namespace that Node's
// instrument(io, {auth: false}) of @socket.io/admin-ui 0.5.1 serves, in
// its default ("development") mode, written once for both engines
// (adminui_zishang.go and adminui_native.go adapt each engine to it).
//
// An Admin UI's socket gets "config" (the features below) and
// "all_sockets" when it connects, "server_stats" every two seconds, and
// one notification per thing that happens to the user sockets:
// socket_connected, socket_disconnected, socket_updated (a polling
// session upgraded), room_joined, room_left, event_received, and
// event_sent (an event emitted to one socket; not broadcasts or pushes).
// It may order "_disconnect", "join", "leave" and "emit" on the sockets
// of a namespace, or of a room of it (a socket's id is its own room).
//
// What it costs is bounded. server_stats carries the events counted by
// kind and second (aggregatedEvents: a few atomic counters, whether a UI
// is connected or not), not one message each. The notifications are made
// only while an Admin UI is connected, wait in one queue of at most
// maxAdminNotes notes and maxAdminNoteBytes bytes (more are dropped), and
// are sent by one goroutine at most every adminFlushGap; an Admin UI
// whose session still holds maxAdminBacklog packets unwritten gets none
// (dropped) until it has read them. Each drop is counted
// (knowngood_admin_ui_dropped_total). all_sockets lists at most
// maxListedSockets sockets.
//
// The Admin UI's own sockets (namespace /admin) are not user sockets:
// they are in no list, count or notification it is sent, and a session
// whose first CONNECT names /admin is the Admin UI's: it counts in no
// figure of the target's but connections_total (metrics.AdminUISession).

const adminNamespace = "/admin"

// The Admin UI's bounds (see above).
const (
	adminStatsEvery   = 2 * time.Second // instrument's interval
	adminFlushGap     = 100 * time.Millisecond
	maxAdminNotes     = 1000
	maxAdminNoteBytes = 512 << 10
	maxAdminBacklog   = 500
	maxListedSockets  = 10000
	maxAdminOrders    = 64
	// maxDisconnectReasons bounds the reasons counted apart in
	// aggregatedEvents (the engines have about ten); more count as "other".
	maxDisconnectReasons = 32
)

// adminConfig is the config event: instrument's supportedFeatures on
// Socket.IO 4, not read-only, in development mode.
var adminConfig = mustJSON(map[string][]string{"supportedFeatures": {
	"EMIT", "JOIN", "LEAVE", "DISCONNECT", "MJOIN", "MLEAVE", "MDISCONNECT", "AGGREGATED_EVENTS", "ALL_EVENTS",
}})

// adminEngine is what the Admin UI needs of an engine whose namespace
// sockets are S. Everything it lists leaves the /admin namespace and the
// Admin UI's sessions out.
type adminEngine[S comparable] interface {
	// emitAdmin sends an event to an Admin UI's socket.
	emitAdmin(s S, event string, args []json.RawMessage)
	// backlog is how many packets s's session holds unwritten.
	backlog(s S) int
	// clients are the user Engine.IO sessions open, and how many of them
	// are on polling.
	clients() (all, polling int)
	namespaces() []adminNamespaceStats
	// sockets are up to max user sockets, as instrument serializes them.
	sockets(max int) []adminSocket
	// The orders, on this replica's sockets of namespace nsp, in room
	// filter ("": every one); a namespace the target does not have is
	// left alone.
	disconnect(nsp, filter string, close bool)
	join(nsp, filter, room string)
	leave(nsp, filter, room string)
	emitTo(nsp, filter, event string, args []json.RawMessage) int
}

// adminHub serves the Admin UIs of one target.
type adminHub[S comparable] struct {
	eng     adminEngine[S]
	m       *metrics.Metrics
	started time.Time
	base    adminBase
	counts  adminCounts

	mu        sync.Mutex
	admins    map[S]bool // true once greeted (config and all_sockets sent)
	notes     []adminNote
	noteBytes int

	watched  atomic.Bool  // an Admin UI is connected: notes are made
	queued   atomic.Int32 // len(notes)
	sessions atomic.Int64 // the Admin UIs' Engine.IO sessions open

	orders    chan adminOrder
	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

type adminNote struct {
	event string
	args  []json.RawMessage
}

// adminBase is the part of server_stats that does not change.
type adminBase struct {
	ServerID string `json:"serverId"`
	Hostname string `json:"hostname"`
	Pid      int    `json:"pid"`
}

// adminStats is server_stats.
type adminStats struct {
	adminBase
	Uptime              float64               `json:"uptime"`
	ClientsCount        int                   `json:"clientsCount"`
	PollingClientsCount int                   `json:"pollingClientsCount"`
	AggregatedEvents    []adminEvent          `json:"aggregatedEvents"`
	Namespaces          []adminNamespaceStats `json:"namespaces"`
}

// adminEvent is one entry of aggregatedEvents: what happened of a type in
// the second starting at Timestamp (Unix milliseconds).
type adminEvent struct {
	Timestamp int64  `json:"timestamp"`
	Type      string `json:"type"`
	SubType   string `json:"subType,omitempty"`
	Count     int64  `json:"count"`
}

type adminNamespaceStats struct {
	Name         string `json:"name"`
	SocketsCount int    `json:"socketsCount"`
}

// adminSocket is a socket as instrument serializes it.
type adminSocket struct {
	ID        string         `json:"id"`
	ClientID  string         `json:"clientId"`
	Transport string         `json:"transport"`
	Nsp       string         `json:"nsp"`
	Data      struct{}       `json:"data"` // the targets set no socket.data
	Handshake adminHandshake `json:"handshake"`
	Rooms     []string       `json:"rooms"`
}

// adminHandshake is a socket's handshake as instrument serializes it
// (Node's socket.handshake without auth).
type adminHandshake struct {
	Address string            `json:"address"`
	Headers map[string]string `json:"headers"`
	Query   map[string]any    `json:"query"`
	Issued  int64             `json:"issued"`
	Secure  bool              `json:"secure"`
	Time    string            `json:"time"`
	URL     string            `json:"url"`
	Xdomain bool              `json:"xdomain"`
}

func newAdminHub[S comparable](eng adminEngine[S], m *metrics.Metrics) *adminHub[S] {
	host, _ := os.Hostname()
	h := &adminHub[S]{
		eng: eng, m: m, started: time.Now(),
		// instrument's serverId is the host name (with the pid in a
		// Node cluster worker, which a Go process never is).
		base:   adminBase{ServerID: host, Hostname: host, Pid: os.Getpid()},
		admins: map[S]bool{},
		orders: make(chan adminOrder, maxAdminOrders),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	h.counts.reasons = map[string]int64{}
	go h.run()
	return h
}

// close stops the hub's goroutine.
func (h *adminHub[S]) close() {
	if h == nil {
		return
	}
	h.closeOnce.Do(func() { close(h.stop) })
	<-h.done
}

// run sends the notifications, server_stats and the orders' work, on one
// goroutine: nothing of it runs on an engine's reader or loop.
func (h *adminHub[S]) run() {
	defer close(h.done)
	stats := time.NewTicker(adminStatsEvery)
	defer stats.Stop()
	gap := time.NewTimer(0)
	<-gap.C
	for {
		select {
		case <-h.stop:
			return
		case <-stats.C:
			h.emitStats()
		case o := <-h.orders:
			h.carryOut(o)
		case <-h.wake:
			h.flush()
			// What comes meanwhile goes in the next batch.
			gap.Reset(adminFlushGap)
			select {
			case <-h.stop:
				return
			case <-gap.C:
			}
		}
	}
}

// watching reports whether notes are made: an Admin UI is connected.
func (h *adminHub[S]) watching() bool { return h != nil && h.watched.Load() }

// adminConnected takes an Admin UI's socket: it is greeted (config,
// all_sockets) on the hub's goroutine, and gets every note made after.
func (h *adminHub[S]) adminConnected(s S) {
	h.mu.Lock()
	h.admins[s] = false
	h.watched.Store(true)
	h.mu.Unlock()
	h.poke()
}

// adminLeft forgets an Admin UI's socket; with the last one, the notes
// waiting go.
func (h *adminHub[S]) adminLeft(s S) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.admins, s)
	if len(h.admins) == 0 {
		h.watched.Store(false)
		h.notes, h.noteBytes = nil, 0
		h.queued.Store(0)
	}
}

func (h *adminHub[S]) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// room reports whether a note may be queued now; a caller that would
// spend something to make one (encode an event's arguments) asks first.
// A note that may not is counted as dropped.
func (h *adminHub[S]) room() bool {
	if h.queued.Load() < maxAdminNotes {
		return true
	}
	h.m.AdminUIDropped(metrics.AdminUIQueueFull, 1)
	return false
}

// note queues a notification for every Admin UI, unless the queue is
// full (counted).
func (h *adminHub[S]) note(event string, args ...json.RawMessage) {
	size := len(event)
	for _, a := range args {
		size += len(a)
	}
	h.mu.Lock()
	if !h.watched.Load() {
		h.mu.Unlock()
		return
	}
	if len(h.notes) >= maxAdminNotes || h.noteBytes+size > maxAdminNoteBytes {
		h.mu.Unlock()
		h.m.AdminUIDropped(metrics.AdminUIQueueFull, 1)
		return
	}
	h.notes = append(h.notes, adminNote{event, args})
	h.noteBytes += size
	h.queued.Store(int32(len(h.notes)))
	first := len(h.notes) == 1
	h.mu.Unlock()
	if first {
		h.poke()
	}
}

// flush sends the notes waiting to every Admin UI greeted, then greets
// the new ones: what a new one's all_sockets lists is at least as recent
// as every note it does not get.
func (h *adminHub[S]) flush() {
	h.mu.Lock()
	notes := h.notes
	h.notes, h.noteBytes = nil, 0
	h.queued.Store(0)
	var greeted, fresh []S
	for s, done := range h.admins {
		if done {
			greeted = append(greeted, s)
		} else {
			fresh = append(fresh, s)
		}
	}
	h.mu.Unlock()
	if len(notes) > 0 {
		for _, s := range greeted {
			if h.eng.backlog(s) >= maxAdminBacklog {
				h.m.AdminUIDropped(metrics.AdminUISlowReader, len(notes))
				continue
			}
			for _, n := range notes {
				h.eng.emitAdmin(s, n.event, n.args)
			}
		}
	}
	if len(fresh) == 0 {
		return
	}
	list := h.eng.sockets(maxListedSockets)
	if list == nil {
		list = []adminSocket{}
	}
	all := mustJSON(list)
	for _, s := range fresh {
		h.eng.emitAdmin(s, "config", []json.RawMessage{adminConfig})
		h.eng.emitAdmin(s, "all_sockets", []json.RawMessage{all})
	}
	h.mu.Lock()
	for _, s := range fresh {
		if _, ok := h.admins[s]; ok {
			h.admins[s] = true
		}
	}
	h.mu.Unlock()
}

// emitStats sends server_stats to every Admin UI greeted; the events
// counted since the last are taken whether one is connected or not, as
// instrument clears its buffer every interval.
func (h *adminHub[S]) emitStats() {
	events := h.counts.take(time.Now())
	h.mu.Lock()
	var admins []S
	for s, done := range h.admins {
		if done {
			admins = append(admins, s)
		}
	}
	h.mu.Unlock()
	if len(admins) == 0 {
		return
	}
	all, polling := h.eng.clients()
	stats := mustJSON(adminStats{
		adminBase: h.base, Uptime: time.Since(h.started).Seconds(),
		ClientsCount: all, PollingClientsCount: polling,
		AggregatedEvents: events, Namespaces: h.eng.namespaces(),
	})
	for _, s := range admins {
		if h.eng.backlog(s) >= maxAdminBacklog {
			h.m.AdminUIDropped(metrics.AdminUISlowReader, 1)
			continue
		}
		h.eng.emitAdmin(s, "server_stats", []json.RawMessage{stats})
	}
}

// The notifications, each with its time as instrument's new Date() is
// sent (an ISO 8601 string).

func (h *adminHub[S]) socketConnected(s adminSocket) {
	if h.watching() && h.room() {
		h.note("socket_connected", mustJSON(s), adminNow())
	}
}

func (h *adminHub[S]) socketDisconnected(nsp, id, reason string) {
	if h.watching() {
		h.note("socket_disconnected", mustJSON(nsp), mustJSON(id), mustJSON(reason), adminNow())
	}
}

// socketUpdated: a socket's session upgraded from polling.
func (h *adminHub[S]) socketUpdated(nsp, id, transport string) {
	if h.watching() {
		h.note("socket_updated", mustJSON(map[string]string{"id": id, "nsp": nsp, "transport": transport}))
	}
}

func (h *adminHub[S]) roomJoined(nsp, room, id string) {
	if h.watching() {
		h.note("room_joined", mustJSON(nsp), mustJSON(room), mustJSON(id), adminNow())
	}
}

func (h *adminHub[S]) roomLeft(nsp, room, id string) {
	if h.watching() {
		h.note("room_left", mustJSON(nsp), mustJSON(room), mustJSON(id), adminNow())
	}
}

// eventReceived and eventSent: args is the event as a JSON array, its name
// first.
func (h *adminHub[S]) eventReceived(nsp, id string, args json.RawMessage) {
	h.note("event_received", mustJSON(nsp), mustJSON(id), args, adminNow())
}

func (h *adminHub[S]) eventSent(nsp, id string, args json.RawMessage) {
	h.note("event_sent", mustJSON(nsp), mustJSON(id), args, adminNow())
}

func adminNow() json.RawMessage {
	return json.RawMessage(time.Now().UTC().AppendFormat([]byte{'"'}, "2006-01-02T15:04:05.000Z\""))
}

// adminOrder is an order of an Admin UI, as its socket sent it.
type adminOrder struct {
	event string
	args  []json.RawMessage
}

// order queues an order for the hub's goroutine; past maxAdminOrders
// waiting, it is dropped (an Admin UI gives them one click at a time).
func (h *adminHub[S]) order(event string, args []json.RawMessage) {
	select {
	case h.orders <- adminOrder{event, args}:
	default:
	}
}

// carryOut carries an order out as instrument's handlers do on Socket.IO
// 4: _disconnect(nsp, close, filter), join(nsp, room, filter),
// leave(nsp, room, filter), emit(nsp, filter, event, ...args). Orders on
// /admin, or of an unknown name or form, are ignored.
func (h *adminHub[S]) carryOut(o adminOrder) {
	str := func(i int) string {
		var s string
		if i < len(o.args) {
			_ = json.Unmarshal(o.args[i], &s)
		}
		return s
	}
	nsp := str(0)
	if nsp == "" || nsp == adminNamespace {
		return
	}
	switch o.event {
	case "_disconnect":
		var close bool
		if len(o.args) > 1 {
			_ = json.Unmarshal(o.args[1], &close)
		}
		h.eng.disconnect(nsp, str(2), close)
	case "join":
		if room := str(1); room != "" {
			h.eng.join(nsp, str(2), room)
		}
	case "leave":
		if room := str(1); room != "" {
			h.eng.leave(nsp, str(2), room)
		}
	case "emit":
		if event := str(2); event != "" {
			h.m.Sent(h.eng.emitTo(nsp, str(1), event, o.args[3:]), 0)
		}
	}
}

// adminCounts are instrument's aggregated events: the Engine.IO sessions
// opened (rawConnection) and closed (rawDisconnection, by reason), and
// the message packets and their bytes each way, since the last
// server_stats.
type adminCounts struct {
	connections, packetsIn, packetsOut, bytesIn, bytesOut atomic.Int64

	mu      sync.Mutex
	reasons map[string]int64
}

func (c *adminCounts) opened() { c.connections.Add(1) }

// adminSession takes back the open of a session found to be the Admin
// UI's.
func (c *adminCounts) adminSession() { c.connections.Add(-1) }

func (c *adminCounts) in(bytes int) {
	if bytes > 0 {
		c.packetsIn.Add(1)
		c.bytesIn.Add(int64(bytes))
	}
}

func (c *adminCounts) out(bytes int) {
	if bytes > 0 {
		c.packetsOut.Add(1)
		c.bytesOut.Add(int64(bytes))
	}
}

func (c *adminCounts) closed(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.reasons[reason]; !ok && len(c.reasons) >= maxDisconnectReasons {
		reason = "other"
	}
	c.reasons[reason]++
}

// take returns what was counted, stamped with the second it is taken in,
// and starts again from 0.
func (c *adminCounts) take(now time.Time) []adminEvent {
	ts := now.Truncate(time.Second).UnixMilli()
	out := []adminEvent{}
	add := func(typ, sub string, n int64) {
		if n > 0 {
			out = append(out, adminEvent{Timestamp: ts, Type: typ, SubType: sub, Count: n})
		}
	}
	opened := c.connections.Swap(0)
	if opened < 0 {
		// An Admin UI's open taken back after its open was sent: the
		// next one is one less.
		c.connections.Add(opened)
	}
	add("rawConnection", "", opened)
	c.mu.Lock()
	reasons := c.reasons
	c.reasons = map[string]int64{}
	c.mu.Unlock()
	for _, r := range slices.Sorted(func(yield func(string) bool) {
		for r := range reasons {
			if !yield(r) {
				return
			}
		}
	}) {
		add("rawDisconnection", r, reasons[r])
	}
	add("packetsIn", "", c.packetsIn.Swap(0))
	add("packetsOut", "", c.packetsOut.Swap(0))
	add("bytesIn", "", c.bytesIn.Swap(0))
	add("bytesOut", "", c.bytesOut.Swap(0))
	return out
}

// sessionKind tells a user session from the Admin UI's, whose first
// CONNECT names /admin, and settles it once with the session's close.
type sessionKind struct {
	connected atomic.Bool  // its first CONNECT was seen
	kind      atomic.Int32 // kindUser, kindAdmin, then closed
}

const (
	kindUser = iota
	kindAdmin
	kindClosedUser
	kindClosedAdmin
)

// firstConnect sees a CONNECT of the session to nsp; true the first time
// it names /admin and the session is still open: it is the Admin UI's
// from now on.
func (k *sessionKind) firstConnect(nsp string) bool {
	if !k.connected.CompareAndSwap(false, true) || nsp != adminNamespace {
		return false
	}
	return k.kind.CompareAndSwap(kindUser, kindAdmin)
}

func (k *sessionKind) admin() bool { return k.kind.Load() == kindAdmin }

// legacy marks an Engine.IO v3 session (-allow-eio3) a user's: Socket.IO
// v2 joins / at the open, without a CONNECT (the Admin UI speaks v4).
func (k *sessionKind) legacy() { k.connected.Store(true) }

// close settles the kind at the session's close; true for the Admin UI's.
func (k *sessionKind) close() bool {
	if k.kind.CompareAndSwap(kindUser, kindClosedUser) {
		return false
	}
	return k.kind.CompareAndSwap(kindAdmin, kindClosedAdmin)
}

// connectNamespace is the namespace of a Socket.IO CONNECT packet
// ("0/admin,{...}": /admin; "0{...}" or "0": /).
func connectNamespace(packet []byte) string {
	if len(packet) < 2 || packet[1] != '/' {
		return "/"
	}
	nsp := packet[1:]
	if i := slices.Index(nsp, ','); i >= 0 {
		nsp = nsp[:i]
	}
	return string(nsp)
}

// newAdminHandshake is a handshake as Node's socket.io records it: the
// headers by lower-case name, the query, the request's URL, when, and
// the client's address (cf-connecting-ip or x-forwarded-for before the
// peer's, as instrument takes it).
func newAdminHandshake(remote string, header map[string][]string, rawURL string, issued time.Time, secure bool) adminHandshake {
	hs := adminHandshake{
		Headers: make(map[string]string, len(header)),
		Query:   map[string]any{},
		Issued:  issued.UnixMilli(),
		Secure:  secure,
		Time:    issued.Format("Mon Jan 02 2006 15:04:05 GMT-0700 (MST)"),
		URL:     rawURL,
	}
	for name, values := range header {
		hs.Headers[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	hs.Xdomain = hs.Headers["origin"] != ""
	if u, err := url.Parse(rawURL); err == nil {
		for k, v := range u.Query() {
			if len(v) == 1 {
				hs.Query[k] = v[0]
			} else {
				hs.Query[k] = v
			}
		}
	}
	hs.Address = remote
	if host, _, err := net.SplitHostPort(remote); err == nil {
		hs.Address = host
	}
	for _, h := range []string{"cf-connecting-ip", "x-forwarded-for"} {
		if v := hs.Headers[h]; v != "" {
			hs.Address = v
			break
		}
	}
	return hs
}

// clientID is instrument's clientId: the first 12 characters of the
// Engine.IO session id.
func clientID(sid string) string { return sid[:min(12, len(sid))] }

// sortNamespaces orders the namespaces as Node lists them: / first, then
// the others (by name here; by creation in Node).
func sortNamespaces(list []adminNamespaceStats) []adminNamespaceStats {
	slices.SortFunc(list, func(a, b adminNamespaceStats) int {
		switch {
		case a.Name == b.Name:
			return 0
		case a.Name == "/":
			return -1
		case b.Name == "/":
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return list
}

// mustJSON encodes a value of the Admin UI's as JSON.stringify does:
// without escaping <, > and & as json.Marshal does for HTML.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("socketio: admin UI value cannot be encoded: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// Package verdict says, in plain words and with the figures behind them,
// whether what went wrong in a run went wrong in the client or in the
// server. It reads the client's own counts beside the server's /stats
// difference over the same run and the server's effective configuration
// (from /health), and applies one rule per way that a load test goes
// wrong: attempts that never reached the server, handshakes the server
// completed but the client did not count, a cap, a connect that holds one
// shared loop, a deadline shorter than the server's work, faults injected
// on purpose, messages lost on one side, and a client that was itself the
// bottleneck.
package verdict

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/plural"
	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Run is what is known about one run. Counts the client does not keep are
// negative.
type Run struct {
	// Attempts: connections (handshakes) the client tried; Connected: those
	// it counted as done. Deadline bounds each attempt on the client (0:
	// none known).
	Attempts  int           `json:"attempts"`
	Connected int           `json:"connected"`
	Deadline  time.Duration `json:"deadline_ns"`
	// Unit is what the client's connections are: "" for handshakes (a
	// WebSocket upgrade, a Socket.IO namespace CONNECT), UnitTCP for raw
	// TCP connections, which only echo-tcp counts as its own.
	Unit string `json:"unit,omitempty"`
	// Answered: attempts the client saw answered with an HTTP status
	// instead of a handshake (a 503 at the cap, a 404 for a path the
	// target does not serve): each reached the server, counted by it as a
	// refused handshake or not at all.
	Answered int `json:"answered,omitempty"`

	// Sent: messages the client sent that the server should have
	// received; Received: replies the client counted back, of the kind the
	// server counts as sent. Slack: how many either count may be off by
	// without anything being wrong (messages in flight when the server's
	// snapshot was taken).
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"`
	Slack    int64 `json:"slack"`
	// Lost (broadcast): deliveries the client expected and did not get.
	Lost int64 `json:"lost"`

	// ClientCPU: the client's CPU seconds over Window, on Cores; negative
	// when unknown.
	ClientCPU float64       `json:"client_cpu_seconds"`
	Window    time.Duration `json:"window_ns"`
	Cores     int           `json:"cores"`

	// Server is the server's /stats difference over the run, nil when
	// there is none; Config its effective configuration keyed by flag name
	// (nil when unknown); ServerCPU its CPU seconds over the run (negative
	// when unknown).
	Server    *protocol.Stats   `json:"-"`
	Config    map[string]string `json:"-"`
	ServerCPU float64           `json:"-"`
	// Replicas: a target of several replicas, each one's part (Server is
	// their sum), so that a loss is placed on the replica that counted
	// it; nil for a single process.
	Replicas []replicas.Replica `json:"-"`
	// Shard is the run's -shard (I/N), "" for a whole run: the server's
	// figures then include the other shards' load, and the client's
	// counts are judged only once the shards' reports are merged.
	Shard string `json:"-"`

	// Unknown: the client's counts that are negative are unknown, not
	// merely not kept (loadgen watch around a tool whose figures it could
	// not read): the verdicts then tell the server's figures and place
	// nothing on the client. Source names where the known ones came from
	// ("k6 summary", "-client-json"; "" for loadgen's own).
	Unknown bool   `json:"-"`
	Source  string `json:"-"`
	// ExitStatus is the client command's exit status when it failed
	// (loadgen watch), 0 otherwise: a run that failed is never one where
	// "nothing was lost".
	ExitStatus int `json:"-"`
}

// Verdict is one finding: Kind names the rule (for scripts and tests),
// Text says it with the figures. Loss: the finding is a loss, on either
// side (connections or messages that one side counted and the other did
// not), which fails the run.
type Verdict struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	Loss bool   `json:"loss,omitempty"`
}

// lossKinds are the kinds of verdict that fail a run: something counted
// by one side and not the other, a client that claims what the server
// never did, or a watched command that failed. Refusals (a -max-conns
// cap, 503s) and abandoned handshakes are the server's documented answers,
// not losses: -threshold 'success>=...' judges them.
var lossKinds = map[string]bool{NeverReached: true, ClientLost: true, NotDelivered: true, RepliesLost: true, SlowClient: true,
	ClaimsMore: true, CommandFailed: true}

// Lost says whether any of vs found a loss.
func Lost(vs []Verdict) bool {
	for _, v := range vs {
		if v.Loss {
			return true
		}
	}
	return false
}

// Kinds of verdict.
const (
	Agree         = "agree"
	NeverReached  = "never-reached"
	ClientLost    = "client-lost"
	Capped        = "capped"
	Rejected      = "rejected"
	Queued        = "queued-connect"
	Abandoned     = "abandoned"
	ServerGaveUp  = "server-gave-up"
	Faults        = "faults"
	NotDelivered  = "messages-not-delivered"
	RepliesLost   = "replies-lost-client-side"
	SlowClient    = "slow-client"
	ClientLimited = "client-limited"
	NoServerView  = "no-server-view"
	PartialView   = "partial-server-view"
	Sharded       = "sharded"
	ClientUnknown = "client-figures-unknown"
	ClaimsMore    = "client-claims-more"
	CommandFailed = "command-failed"
	Unfinished    = "handshakes-unfinished"
	Incomparable  = "units-differ"
	Outside       = "answered-outside-handshakes"
	Interop       = "mishandled-elsewhere"
)

// Unknowing reports whether the verdicts say that the client's figures
// are unknown.
func Unknowing(vs []Verdict) bool {
	for _, v := range vs {
		if v.Kind == ClientUnknown {
			return true
		}
	}
	return false
}

// SaturationFrac: a client that used more than this share of the CPU it
// could have had was its own bottleneck.
const SaturationFrac = 0.9

// Judge applies every rule and returns what holds, the most telling first.
func Judge(r Run) []Verdict {
	var out []Verdict
	add := func(kind, format string, args ...any) {
		out = append(out, Verdict{Kind: kind, Text: fmt.Sprintf(format, args...), Loss: lossKinds[kind]})
	}
	s := r.Server
	if r.ExitStatus != 0 {
		add(CommandFailed, "the command failed (exit status %d): the run did not go as the tool meant, whatever the figures say", r.ExitStatus)
	}
	if s == nil {
		add(NoServerView, "no server view (no /stats): the run's failures cannot be placed on either side; give -admin")
	} else {
		partial(r, add)
		if r.Shard != "" {
			add(Sharded, "this is shard %s of a run: the server's figures include the other shards' load, so the client's counts are judged against them only in the merged report (loadgen merge)", r.Shard)
		} else {
			connections(r, s, add)
			messages(r, s, add)
			unknown(r, s, add)
		}
		if n := sum(s.Faults); n > 0 {
			add(Faults, "the server injected %s on purpose (%s): failures up to that many are the server's, by design%s", plural.Of(n, "fault"), tally.Line(s.Faults), byReplica(r, func(d *protocol.Stats) uint64 { return sum(d.Faults) }))
			// Messages dropped on purpose (-fault-drop) are a loss on
			// the server's side.
			out[len(out)-1].Loss = s.Faults["drop"] > 0
		}
		interop(s, add)
	}
	saturation(r, add)
	if len(out) == 0 && s != nil && r.ExitStatus == 0 {
		add(Agree, "client and server agree: nothing was lost on either side")
	}
	return out
}

// unknown tells the server's figures that have no client count beside
// them, when the client's are unknown.
func unknown(r Run, s *protocol.Stats, add func(string, string, ...any)) {
	if !r.Unknown {
		return
	}
	var what []string
	if r.Attempts < 0 && r.Connected < 0 {
		h := s.Handshakes
		line := fmt.Sprintf("the server saw %d handshakes complete", h[protocol.ResultOK])
		var not []string
		for _, k := range []string{protocol.ResultAbandoned, protocol.ResultRejected, protocol.ResultFailed} {
			if h[k] > 0 {
				not = append(not, fmt.Sprintf("%d %s", h[k], k))
			}
		}
		if len(not) > 0 {
			line += " (" + strings.Join(not, ", ") + ")"
		}
		what = append(what, line)
	}
	if !rawTCP(r) {
		switch {
		case r.Sent < 0 && r.Received < 0:
			what = append(what, fmt.Sprintf("%d messages in and %d out", s.MessagesReceived, s.MessagesSent))
		case r.Sent < 0:
			what = append(what, fmt.Sprintf("%d messages in", s.MessagesReceived))
		case r.Received < 0:
			what = append(what, fmt.Sprintf("%d messages out", s.MessagesSent))
		}
	}
	if len(what) == 0 {
		return
	}
	if r.Source == "" {
		add(ClientUnknown, "%s; client figures unknown: pass -client-json or use a recognised tool; nothing is placed on the client", strings.Join(what, ", "))
		return
	}
	add(ClientUnknown, "%s; the client's figures (%s) have no count of these: nothing is placed on the client", strings.Join(what, ", "), r.Source)
}

// connections judges the handshakes.
func connections(r Run, s *protocol.Stats, add func(string, string, ...any)) {
	if rawTCP(r) {
		tcpConnections(r, s, add) // a raw TCP target has no handshake to count
		return
	}
	if r.Unit == UnitHTTP {
		httpRequests(r, s, add)
		return
	}
	if r.Unit == UnitTCP {
		add(Incomparable, "the client counted TCP connections (%d of %d), and this target counts handshakes (WebSocket upgrades or Socket.IO CONNECTs; %d completed): the two cannot be compared%s",
			r.Connected, r.Attempts, s.Handshakes[protocol.ResultOK], from(r))
		return
	}
	if r.Unknown && r.Attempts < 0 && r.Connected < 0 {
		serverSide(r, s, uint64(0), add)
		return
	}
	if r.Attempts <= 0 && !(r.Unknown && r.Connected >= 0) {
		return
	}
	ok, rejected, failed, abandoned := s.Handshakes[protocol.ResultOK], s.Handshakes[protocol.ResultRejected],
		s.Handshakes[protocol.ResultFailed], s.Handshakes[protocol.ResultAbandoned]
	seen := ok + rejected + failed + abandoned
	n := uint64(max(r.Attempts, 0))
	if r.Attempts < 0 { // only the connections done are known: judge against what the server saw
		n = seen
	}
	p99 := ms(s.HandshakeLatency.P99)
	// A connection the server opened is one that reached it, whether or
	// not its handshake had a result when the server was read: a
	// Socket.IO session counts from its Engine.IO open, its handshake
	// from its namespace CONNECT.
	reached, open := max(seen, s.ConnectionsTotal), s.ConnectionsTotal-min(seen, s.ConnectionsTotal)
	if outside := answeredOutside(r, rejected, add); outside > 0 {
		reached = max(reached, seen+outside)
	}
	if connected := uint64(max(r.Connected, 0)); r.Connected >= 0 && connected > ok {
		claims(r, connected, ok, seen, open, add)
	}
	if reached < n {
		add(NeverReached, "the server saw %d of %d attempts: %d never reached it%s%s", reached, n, n-reached, whyNeverReached(s), onlyInSum(r))
	}
	listenQueue(s, reached, n, add)
	if connected := uint64(max(r.Connected, 0)); ok > connected && (r.Connected >= 0 || !r.Unknown) {
		add(ClientLost, "the server completed %d of %d handshakes (p99 %s); the client counted %d: %s lost on the client side",
			ok, n, p99, connected, other(int64(ok-connected)))
	}
	serverSide(r, s, n, add)
	if sharedLoop(r) {
		queued(r, n, add)
	}
	if abandoned > 0 {
		deadline := "its deadline"
		if r.Deadline > 0 {
			deadline = "its deadline of " + r.Deadline.String()
		}
		add(Abandoned, "the client left %s before the server had finished them (%s; the server's p99 of those it finished %s)%s", plural.Of(abandoned, "handshake"), deadline, p99, byReplica(r, result(protocol.ResultAbandoned)))
	}
	if seen == n && ok == n && uint64(r.Connected) == n {
		add(Agree, "client and server agree: %d of %d handshakes completed (server p99 %s)%s", n, n, p99, from(r))
	}
}

// serverSide judges what the server refused or gave up on, of n attempts
// (0: the client's count is unknown).
func serverSide(r Run, s *protocol.Stats, n uint64, add func(string, string, ...any)) {
	rejected, failed := s.Handshakes[protocol.ResultRejected], s.Handshakes[protocol.ResultFailed]
	of := ""
	if n > 0 {
		of = fmt.Sprintf(" of %d", n)
	}
	if rejected > 0 {
		if cap := r.Config["max-conns"]; cap != "" && cap != "0" {
			add(Capped, "the server refused %d%s at its -max-conns %s cap (HTTP 503, or a Socket.IO connect error)%s", rejected, of, cap, byReplica(r, result(protocol.ResultRejected)))
		} else {
			add(Rejected, "the server rejected %d%s (HTTP 503, a forbidden Origin, or a Socket.IO connect error)%s", rejected, of, byReplica(r, result(protocol.ResultRejected)))
		}
	}
	if failed > 0 {
		add(ServerGaveUp, "the server gave up on %s: bad requests, or its -handshake-timeout / -connect-timeout ran out%s", plural.Of(failed, "handshake"), byReplica(r, result(protocol.ResultFailed)))
	}
}

// from names the source of the client's figures, when it is not loadgen.
func from(r Run) string {
	if r.Source == "" {
		return ""
	}
	return " (the client's figures: " + r.Source + ")"
}

// messages judges the messages both ways.
func messages(r Run, s *protocol.Stats, add func(string, string, ...any)) {
	if rawTCP(r) || r.Unit == UnitTCP {
		tcpMessages(r, s, add)
		return
	}
	s = withoutAuthEvents(r, s)
	fine := true
	if r.Sent >= 0 {
		if got := int64(s.MessagesReceived); r.Sent-got > r.Slack {
			add(NotDelivered, "over the whole run, the client sent %s and the server received %d: %d never reached it%s", plural.Of(r.Sent, "message"), got, r.Sent-got, lossOn(r))
			fine = false
		}
	}
	if r.Received >= 0 {
		if sent := int64(s.MessagesSent); sent-r.Received > r.Slack {
			add(RepliesLost, "over the whole run, the server sent %s and the client counted %d: %s lost on the client side%s", plural.Of(sent, "message"), r.Received, other(sent-r.Received), authNote(r))
			fine = false
		}
		if sent := int64(s.MessagesSent); r.Received-sent > r.Slack {
			add(ClaimsMore, "the client claims %d messages received, more than the %d the server sent: the client's count is wrong, or counts something else%s", r.Received, sent, from(r))
			fine = false
		}
	}
	if r.Lost > 0 {
		fine = false
		if d := int64(s.BroadcastDropped); d > 0 {
			add(SlowClient, "the client missed %s; the server dropped %d for connections whose send queue was full (-send-queue %s, -slow %s): those clients did not read fast enough, the client's limit%s",
				plural.Of(r.Lost, "delivery"), d, orDash(r.Config["send-queue"]), orDash(r.Config["slow"]), byReplica(r, func(d *protocol.Stats) uint64 { return d.BroadcastDropped }))
		} else {
			add(RepliesLost, "the client missed %s that the server dropped none of: lost on the client side, or still on the way%s", plural.Of(r.Lost, "delivery"), lossOn(r))
		}
	}
	if fine && (r.Sent >= 0 || r.Received >= 0) {
		var what []string
		if r.Sent >= 0 {
			what = append(what, fmt.Sprintf("the client sent %d, the server received %d", r.Sent, s.MessagesReceived))
		}
		if r.Received >= 0 {
			what = append(what, fmt.Sprintf("the server sent %d, the client counted %d", s.MessagesSent, r.Received))
		}
		add(Agree, "client and server agree on the messages: %s (counts of the whole run, through the last close)%s%s", strings.Join(what, "; "), authNote(r), from(r))
	}
}

// saturation says when the figures are the client's limit.
func saturation(r Run, add func(string, string, ...any)) {
	if r.ClientCPU < 0 || r.Window <= 0 || r.Cores <= 0 {
		return
	}
	avail := r.Window.Seconds() * float64(r.Cores)
	switch {
	case r.ClientCPU > SaturationFrac*avail:
		add(ClientLimited, "the client used %.2f of the %.2f CPU seconds it could have had (%d%%, %s): the figures are the client's limit, not the server's",
			r.ClientCPU, avail, int(100*r.ClientCPU/avail), plural.Of(r.Cores, "core"))
	case r.ServerCPU >= 0 && r.ClientCPU > r.ServerCPU && r.ClientCPU > 0.25*avail:
		// Only a client busy for a quarter of the machine or more: a
		// light run says nothing about either side's limits.
		add(ClientLimited, "the client used more CPU (%.2f s) than the target (%.2f s): the figures are the client's limit, not the server's",
			r.ClientCPU, r.ServerCPU)
	}
}

// partial says which replicas' figures are missing from the sum.
func partial(r Run, add func(string, string, ...any)) {
	if len(r.Replicas) < 2 {
		return
	}
	var missing []string
	for _, p := range r.Replicas {
		if p.Diff == nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", p.Admin, p.Error))
		}
	}
	if len(missing) == 0 {
		return
	}
	add(PartialView, "the server's view is partial: no /stats from replica %s; the figures are the sum over the other %d of %d replicas, and what the missing ones counted shows as lost",
		strings.Join(missing, ", replica "), len(r.Replicas)-len(missing), len(r.Replicas))
}

// byReplica names the replicas whose count is not zero, for a verdict on
// the sum: "" for a single process.
func byReplica(r Run, count func(*protocol.Stats) uint64) string {
	on := perReplica(r, func(admin string, d *protocol.Stats) string {
		if n := count(d); n > 0 {
			return fmt.Sprintf("%d on replica %s", n, admin)
		}
		return ""
	})
	if len(on) == 0 {
		return ""
	}
	return " (" + strings.Join(on, ", ") + ")"
}

// perReplica is what say tells of each replica's part that has one, in
// order; nil for a single process.
func perReplica(r Run, say func(admin string, d *protocol.Stats) string) []string {
	if len(r.Replicas) < 2 {
		return nil
	}
	var on []string
	for _, p := range r.Replicas {
		if p.Diff == nil {
			continue
		}
		if s := say(p.Admin, p.Diff); s != "" {
			on = append(on, s)
		}
	}
	return on
}

// result counts one handshake result.
func result(name string) func(*protocol.Stats) uint64 {
	return func(d *protocol.Stats) uint64 { return d.Handshakes[name] }
}

// lossOn names the replicas that counted a loss of messages (a fault
// injected, a broadcast dropped, an invalid message answered with an
// error), for a shortfall seen only in the sum; or says that none did.
func lossOn(r Run) string {
	if len(r.Replicas) < 2 {
		return ""
	}
	on := perReplica(r, func(admin string, d *protocol.Stats) string {
		var what []string
		if n := sum(d.Faults); n > 0 {
			what = append(what, "faults "+tally.Line(d.Faults))
		}
		if d.BroadcastDropped > 0 {
			what = append(what, fmt.Sprintf("%d dropped", d.BroadcastDropped))
		}
		if n := sum(d.InvalidMessages); n > 0 {
			what = append(what, "invalid "+tally.Line(d.InvalidMessages))
		}
		if bad := abnormal(d.Disconnects); len(bad) > 0 {
			what = append(what, "abnormal disconnects "+tally.Line(bad))
		}
		if len(what) == 0 {
			return ""
		}
		return fmt.Sprintf("replica %s counted %s", admin, strings.Join(what, ", "))
	})
	if len(on) == 0 {
		return onlyInSum(r)
	}
	return "; " + strings.Join(on, "; ")
}

// abnormal keeps the disconnects that end a connection with messages
// possibly in flight: a WebSocket close code other than a normal close
// (1000), going away (1001) or none given (1005), and Engine.IO's ping
// timeout, transport error and parse error.
func abnormal(disconnects map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for reason, n := range disconnects {
		code, err := strconv.Atoi(reason)
		switch {
		case err == nil && code != 1000 && code != 1001 && code != 1005,
			reason == "ping timeout", reason == "transport error", reason == "parse error":
			out[reason] = n
		}
	}
	return out
}

// onlyInSum says that no replica counted a loss seen in the sum.
func onlyInSum(r Run) string {
	if len(r.Replicas) < 2 {
		return ""
	}
	if missing := replicas.Missing(r.Replicas); len(missing) > 0 {
		return "; no replica that answered counted it: it may be on replica " + strings.Join(missing, ", replica ") + ", whose figures are missing"
	}
	return "; no replica counted it: the loss can be seen only in the sum over the replicas"
}

// other is "the other 1 was" or "the other N were".
func other(n int64) string {
	if n == 1 {
		return "the other 1 was"
	}
	return fmt.Sprintf("the other %d were", n)
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func ms(seconds float64) string {
	if seconds <= 0 {
		return "-"
	}
	return strconv.FormatFloat(seconds*1000, 'f', 1, 64) + " ms"
}

func round(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Write prints the verdicts under the report's table, one per line.
func Write(w io.Writer, vs []Verdict) {
	for i, v := range vs {
		lead := "verdict: "
		if i > 0 {
			lead = "         "
		}
		fmt.Fprintf(w, "%s%s\n", lead, v.Text)
	}
}

// queued predicts, for a blocking target, how many of n connects sent at
// once its frozen loop lets finish within the client's deadline, by the
// write model the target reports (-blocking-model; a target that reports
// none answers in each handler's turn, as node does).
func queued(r Run, n uint64, add func(string, string, ...any)) {
	d, err := time.ParseDuration(r.Config["delay"])
	if err != nil || d <= 0 {
		return
	}
	need := time.Duration(n) * d
	if r.Deadline <= 0 || need <= r.Deadline {
		return
	}
	model := r.Config["blocking-model"]
	expect := int(protocol.BlockingSuccess(model, int(n), d, r.Deadline) * float64(n))
	counted := strconv.Itoa(r.Connected)
	if r.Connected < 0 {
		counted = "unknown"
	}
	if model == protocol.BlockingAsyncio {
		add(Queued, "the server froze its one loop %s for each connect and let an answer leave only after the connects queued with it (-blocking-model asyncio, as python-socketio on uvicorn): %d connects need %s, the client's deadline was %s, and every ack of the burst leaves after the last, so about %d (only those done before the burst filled the loop) can succeed; the client counted %s",
			d, n, round(need), r.Deadline, expect, counted)
		return
	}
	add(Queued, "the server froze its one loop %s for each connect, answering each in its own turn (-blocking-model node, as Node's socket.io): %d connects need %s, the client's deadline was %s, so about %d (min(1, T / (N x delay))) can succeed; the client counted %s",
		d, n, round(need), r.Deadline, expect, counted)
}

// interopWhy says, for each kind of request the targets count in
// interop_requests, what a known server does with it.
var interopWhy = map[string]string{
	"chunked_post": "polling POSTs without Content-Length (Transfer-Encoding: chunked), which python-engineio 4 (python-socketio 5 on uvicorn) reads as empty: it answers 200 OK and drops their packets, so a CONNECT in one is never acknowledged",
}

// interop warns of requests the target served that a known server
// mishandles: the client works here and may not against that server.
func interop(s *protocol.Stats, add func(string, string, ...any)) {
	for kind, n := range s.InteropRequests {
		if n == 0 {
			continue
		}
		why, ok := interopWhy[kind]
		if !ok {
			why = kind + " requests, which a known server mishandles (servers/README.md)"
		}
		add(Interop, "the client sent %d %s; this target served them (-fault-drop-chunked-post answers as that server does)", n, why)
	}
}

package verdict

import (
	"github.com/knowngood/knowngood/shared/protocol"
)

// UnitTCP is Run.Unit for a client whose connections are raw TCP.
const UnitTCP = "tcp"

// UnitHTTP is Run.Unit for a client whose attempts are plain HTTP
// requests, one per TCP connection (loadgen conns -get); Answered counts
// those that got a response.
const UnitHTTP = "http"

// The rules in this file keep the client's count and the server's of one
// unit: a figure of one kind is never judged against one of another (an
// Engine.IO session against a Socket.IO handshake, a TCP connection
// against a WebSocket upgrade, a read against a message); where the units
// differ, the verdict says so and places nothing on either side.

// claims judges a client that counted more connected than the server
// completed handshakes: those the server opened whose handshake was still
// open when it was read (open) are a count of another unit, not a loss;
// only the rest is a claim of the client's.
func claims(r Run, connected, ok, seen, open uint64, add func(string, string, ...any)) {
	if unfinished := min(connected-ok, open); unfinished > 0 {
		add(Unfinished, "the server had opened %d connections whose handshake had not finished when it was read (on a Socket.IO target, an Engine.IO session that has not sent its namespace CONNECT): the client counts them connected, the server does not count them as handshakes; the two cannot be compared as handshakes%s",
			unfinished, from(r))
		connected -= unfinished
	}
	if connected > ok {
		add(ClaimsMore, "the client claims %d connected, more than the %d handshakes the server completed (of %d it saw): %d that the server never completed; the client's count is wrong, or counts something else%s",
			connected, ok, seen, connected-ok, from(r))
	}
}

// tcpConnections judges raw TCP connections against echo-tcp's count of
// the connections it accepted (it has no handshake).
func tcpConnections(r Run, s *protocol.Stats, add func(string, string, ...any)) {
	if r.Attempts <= 0 || r.Connected < 0 {
		return
	}
	n, connected, accepted := uint64(r.Attempts), uint64(r.Connected), s.ConnectionsTotal
	if connected > accepted {
		add(ClaimsMore, "the client claims %d TCP connections, more than the %d the server accepted: the client's count is wrong, or counts something else%s", connected, accepted, from(r))
	}
	if accepted < n {
		add(NeverReached, "the server accepted %d of %d TCP connections: %d never reached it%s%s", accepted, n, n-accepted, whyNeverReached(s), onlyInSum(r))
	}
	listenQueue(s, accepted, n, add)
	if accepted > connected {
		add(ClientLost, "the server accepted %d TCP connections; the client counted %d: %s lost on the client side", accepted, connected, other(int64(accepted-connected)))
	}
	if accepted == n && connected == n {
		add(Agree, "client and server agree: %d of %d TCP connections accepted%s", n, n, from(r))
	}
}

// httpRequests judges plain HTTP requests against what the server saw of
// them: a WebSocket target answers a GET that is not an upgrade with 426
// and counts it as a failed handshake; a target that serves the GET
// itself counts the connection. Either is a request that reached it.
func httpRequests(r Run, s *protocol.Stats, add func(string, string, ...any)) {
	if r.Attempts <= 0 {
		return
	}
	var seen uint64
	for _, c := range s.Handshakes {
		seen += c
	}
	n, answered := uint64(r.Attempts), uint64(max(r.Answered, 0))
	reached := max(seen, s.ConnectionsTotal, answered)
	if reached < n {
		add(NeverReached, "the server saw %d of %d requests: %d never reached it%s%s", reached, n, n-reached, whyNeverReached(s), onlyInSum(r))
	}
	listenQueue(s, reached, n, add)
	if reached > answered {
		add(ClientLost, "the server saw %d requests; the client had %d answered: %s lost on the client side", reached, answered, other(int64(reached-answered)))
	}
	if reached == n && answered == n {
		add(Agree, "client and server agree: all %d requests reached the server and were answered (%d with the status the client counts)%s", n, r.Connected, from(r))
	}
}

// tcpMessages: echo-tcp counts reads, whatever the client's messages
// were, and a WebSocket or Socket.IO target counts no message on a raw
// TCP connection: the messages cannot be compared; the bytes can, on
// echo-tcp.
func tcpMessages(r Run, s *protocol.Stats, add func(string, string, ...any)) {
	if r.Sent < 0 && r.Received < 0 {
		return
	}
	if !rawTCP(r) {
		add(Incomparable, "the client's messages went over raw TCP, which this target does not read as messages: the client's %d sent and %d received cannot be compared with the server's %d received and %d sent", r.Sent, r.Received, s.MessagesReceived, s.MessagesSent)
		return
	}
	add(Incomparable, "%s counts reads, not messages: the client's %d sent and %d received are not compared with its counts (it received %d bytes and sent %d)", r.Config["variant"], r.Sent, r.Received, s.BytesReceived, s.BytesSent)
}

// withoutAuthEvents is s without the "auth" event that a Socket.IO target
// started with -emit-auth sends each socket on its namespace CONNECT: it
// counts it as a message sent, and a client that echoes counts only the
// acknowledgements of its own events.
func withoutAuthEvents(r Run, s *protocol.Stats) *protocol.Stats {
	if r.Config["emit-auth"] != "true" || r.Received < 0 {
		return s
	}
	d := *s
	d.MessagesSent -= min(d.MessagesSent, d.Handshakes[protocol.ResultOK])
	return &d
}

// authNote says that the server's count of messages sent left out the
// auth events, for the verdicts on the messages.
func authNote(r Run) string {
	if r.Config["emit-auth"] != "true" || r.Received < 0 {
		return ""
	}
	return " (the server's messages sent without the auth event it emits on each namespace CONNECT, -emit-auth)"
}

// answeredOutside says how many of the attempts the client saw answered
// with an HTTP status the server did not count as refused handshakes (a
// path it does not serve answers 404 before any handshake begins), and
// says so: they reached it, and were refused there.
func answeredOutside(r Run, rejected uint64, add func(string, string, ...any)) uint64 {
	answered := uint64(max(r.Answered, 0))
	if answered <= rejected {
		return 0
	}
	outside := answered - rejected
	add(Outside, "the server answered %d attempts with an HTTP status and counted no handshake for them (the client's errors name the status; a 404 is a path it does not serve): they reached it, and were refused there%s",
		outside, from(r))
	return outside
}

// rawTCP reports whether the run's target speaks raw TCP: it counts reads
// and connections, not messages and handshakes. loadgen imports no server
// code, so it reads the protocol /health publishes, never a variant name:
// the catalog alone knows which variant is which.
func rawTCP(r Run) bool {
	return r.Config["protocol"] == protocol.ProtocolTCP
}

// sharedLoop reports whether the run's target holds every connect in one
// queue, by the connect model /health publishes.
func sharedLoop(r Run) bool {
	return r.Config["connect"] == protocol.ConnectSharedLoop
}

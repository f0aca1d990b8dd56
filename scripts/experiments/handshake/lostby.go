package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// lostBy says, from the server's counts of the same run, which side lost
// the connections the client did not count: "none", the server's (it
// refused them or gave up on them), or the client's (the server completed
// more than the client counted, or never saw them while it refused none).
// For a Go client row it names the first transports the server does not
// serve, that no connection of theirs connected on.
func lostBy(r row) string {
	if r.res == nil {
		return "-"
	}
	if r.stats == nil {
		return firstTransports(r)
	}
	h := r.stats.Handshakes
	ok, rejected, failed, abandoned := h[protocol.ResultOK], h[protocol.ResultRejected], h[protocol.ResultFailed], h[protocol.ResultAbandoned]
	seen, n, connected := ok+rejected+failed+abandoned, uint64(r.res.Attempts), uint64(max(r.res.Connected, 0))
	if connected == n && ok == n {
		return "none"
	}
	var out []string
	if connected > ok {
		out = append(out, fmt.Sprintf("client's count: %d connected, more than the server's %d", connected, ok))
	}
	if rejected+failed > 0 {
		out = append(out, fmt.Sprintf("server: refused %d, gave up on %d", rejected, failed))
	}
	if ok > connected {
		out = append(out, fmt.Sprintf("client: the server completed %d it did not count", ok-connected))
	}
	if abandoned > 0 {
		who := "client: left %d before the server finished them"
		if r.server.handler == handlerBlocking {
			who = "the server's frozen loop, as its model predicts: the client's deadline left %d"
		}
		out = append(out, fmt.Sprintf(who, abandoned))
	}
	if seen < n && rejected+failed == 0 {
		out = append(out, fmt.Sprintf("client: %d never reached the server, which refused none and completed all %d it saw%s", n-seen, ok, unserved(r)))
	}
	if chunked := r.stats.InteropRequests[metrics.InteropChunkedPost]; chunked > 0 {
		out = append(out, fmt.Sprintf("(served %d chunked polling POSTs, which python-engineio 4 drops)", chunked))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, "; ")
}

// firstTransports explains, without a server view (the real servers), the
// losses of the Go client by the transport each connection tried first.
func firstTransports(r row) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.res.FirstTransport)) {
		t := r.res.FirstTransport[name]
		if t.Attempts == 0 || t.Connected == t.Attempts {
			continue
		}
		why := ""
		switch {
		case name == "webtransport":
			why = ": no server here serves WebTransport"
		case name == "polling" && r.server.kind == python && t.Connected == 0:
			why = ": the client sends each polling POST chunked, without Content-Length, and python-engineio 4 reads it as empty: the CONNECT in it is never answered"
		}
		out = append(out, fmt.Sprintf("%s first: %d of %d connected%s", name, t.Connected, t.Attempts, why))
	}
	if len(out) == 0 {
		return "- (no server view)"
	}
	return "client, by first transport: " + strings.Join(out, "; ")
}

// unserved names the first transports of the client's connections that
// the server counted no handshake on, and that connected none.
func unserved(r row) string {
	var names []string
	for name, t := range r.res.FirstTransport {
		if _, served := r.stats.HandshakesByTransport[name]; !served && t.Attempts > 0 && t.Connected == 0 {
			names = append(names, fmt.Sprintf("%s for %d", name, t.Attempts))
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return " (the client's first transport was " + strings.Join(names, ", ") + ", which the server does not serve)"
}

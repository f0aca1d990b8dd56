package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/protocol"
)

// lostBy says, from the server's counts of the same run, which side lost
// the connections the client did not count: "none", the server's (it
// refused them or gave up on them), or the client's (the server completed
// more than the client counted, or never saw them while it refused none).
// For a Go client row it names the first transports the server does not
// serve, that no connection of theirs connected on.
func lostBy(r row) string {
	if r.server == nil || r.res == nil {
		return "- (no server view)"
	}
	h := r.server.Handshakes
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
		if r.variant == benchrun.SharedLoop {
			who = "the server's queue, as predicted: the client's deadline left %d"
		}
		out = append(out, fmt.Sprintf(who, abandoned))
	}
	if seen < n && rejected+failed == 0 {
		out = append(out, fmt.Sprintf("client: %d never reached the server, which refused none and completed all %d it saw%s", n-seen, ok, unserved(r)))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, "; ")
}

// unserved names the first transports of the client's connections that
// the server counted no handshake on, and that connected none.
func unserved(r row) string {
	var names []string
	for name, t := range r.res.FirstTransport {
		if _, served := r.server.HandshakesByTransport[name]; !served && t.Attempts > 0 && t.Connected == 0 {
			names = append(names, fmt.Sprintf("%s for %d", name, t.Attempts))
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return " (the client's first transport was " + strings.Join(names, ", ") + ", which the server does not serve)"
}

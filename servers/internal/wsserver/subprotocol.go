package wsserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// subprotocol is the answer to a request's Sec-WebSocket-Protocol with
// -subprotocols served: the first subprotocol the client offered that
// served has (the string from served, never a view of the request), ""
// for none, and whether the client offered any. A header that does not
// parse is refused with Node's ws's answer, 400 "Invalid
// Sec-WebSocket-Protocol header". Without -subprotocols the header is not
// read at all, as before the flag existed.
func subprotocol(r requestHead, served []string) (chosen string, offered bool, rf *refusal) {
	if len(served) == 0 {
		return "", false, nil
	}
	values := r.values("Sec-Websocket-Protocol")
	if values == nil {
		return "", false, nil
	}
	// Node joins a repeated header's lines with ", ", and ws parses that.
	offers, ok := parseSubprotocols(strings.Join(values, ", "))
	if !ok {
		return "", true, &refusal{status: http.StatusBadRequest, msg: "Invalid Sec-WebSocket-Protocol header", result: protocol.ResultFailed}
	}
	for _, o := range offers {
		if i := slices.Index(served, o); i >= 0 {
			return served[i], true, nil
		}
	}
	return "", len(offers) > 0, nil
}

// parseSubprotocols splits a Sec-WebSocket-Protocol value as ws's
// subprotocol.parse does: tokens separated by commas, spaces and tabs
// around them; an empty element, a character outside a token or a
// repeated name makes it invalid.
func parseSubprotocols(v string) ([]string, bool) {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		name := strings.Trim(item, " \t")
		if name == "" || !isToken(name) || slices.Contains(out, name) {
			return nil, false
		}
		out = append(out, name)
	}
	return out, true
}

// noSubprotocol refuses a client that offered none of the subprotocols
// served (-subprotocol-required) with 401, the status Node's ws answers a
// handshake its verifyClient refuses: ws has no refusal of its own for a
// subprotocol, so a server on it that requires one refuses there.
func noSubprotocol(served []string) *refusal {
	return &refusal{
		status: http.StatusUnauthorized,
		msg:    fmt.Sprintf("no subprotocol offered in Sec-WebSocket-Protocol is served; want one of %s (-subprotocol-required)", strings.Join(served, ", ")),
		result: protocol.ResultRejected,
	}
}

// countSubprotocol counts a connection opened by a client that offered
// subprotocols: the one answered, or metrics.SubprotocolNone.
func countSubprotocol(m *metrics.Metrics, chosen string, offered bool) {
	switch {
	case chosen != "":
		m.Subprotocol(chosen)
	case offered:
		m.Subprotocol(metrics.SubprotocolNone)
	}
}

// isToken reports whether s is an HTTP token (RFC 9110 5.6.2).
func isToken(s string) bool {
	for i := range len(s) {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return s != ""
}

package wsserver

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// refusal is the HTTP answer to a request that does not become a WebSocket
// connection, and the handshake result it counts as.
type refusal struct {
	status int
	msg    string   // one line, without the newline
	header []string // extra header fields: name, value, name, value...
	result string
	capped bool // over -max-conns, counted apart so the cause shows
}

// record counts the refused handshake, and its cause when it is the cap.
func (rf *refusal) record(m *metrics.Metrics) {
	m.Handshake(rf.result, transport, 0)
	if rf.capped {
		m.CapRefused()
	}
}

// requestHead is what the upgrade checks read of a request: an
// *http.Request (httpHead), or, on gnet, a request head read in place
// (fastRequest).
type requestHead interface {
	method() string
	// proto is the protocol version as sent, and whether it is at least
	// HTTP/1.1.
	proto() (string, bool)
	// values are the request's values of the header field name, given in
	// canonical form, in order, as http.Header.Values returns them.
	values(name string) []string
}

// httpHead is an *http.Request as a requestHead.
type httpHead http.Request

func (r *httpHead) method() string              { return r.Method }
func (r *httpHead) proto() (string, bool)       { return r.Proto, (*http.Request)(r).ProtoAtLeast(1, 1) }
func (r *httpHead) values(name string) []string { return r.Header.Values(name) }

// first is the first value of the header field name, or "" (as
// http.Header.Get).
func first(h requestHead, name string) string {
	if v := h.values(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// checkUpgrade is the one check every WebSocket target makes before it
// upgrades, so that the three libraries answer a bad request alike (each
// library has its own statuses and messages, and gorilla and coder check
// Origin by default). nil means upgrade.
func checkUpgrade(r *http.Request, origins []string) *refusal {
	return checkHead((*httpHead)(r), origins)
}

// checkHead is checkUpgrade on any requestHead.
func checkHead(r requestHead, origins []string) *refusal {
	bad := func(status int, format string, args ...any) *refusal {
		return &refusal{status: status, msg: "bad WebSocket upgrade: " + fmt.Sprintf(format, args...), result: protocol.ResultFailed}
	}
	method := r.method()
	proto, atLeast11 := r.proto()
	switch {
	case !hasTokenIn(r.values("Upgrade"), "websocket"):
		return &refusal{
			status: http.StatusUpgradeRequired,
			msg:    "this is a WebSocket endpoint: send a WebSocket upgrade request (Upgrade: websocket)",
			header: []string{"Upgrade", "websocket", "Sec-WebSocket-Version", "13"},
			result: protocol.ResultFailed,
		}
	case method != http.MethodGet:
		rf := bad(http.StatusMethodNotAllowed, "method %s, want GET", method)
		rf.header = []string{"Allow", http.MethodGet}
		return rf
	case !atLeast11:
		return bad(http.StatusBadRequest, "%s, want HTTP/1.1", proto)
	case !hasTokenIn(r.values("Connection"), "upgrade"):
		return bad(http.StatusBadRequest, "the Connection header lacks upgrade")
	case first(r, "Sec-Websocket-Version") != "13":
		// RFC 6455 4.4: say which version the server speaks.
		rf := bad(http.StatusUpgradeRequired, "Sec-WebSocket-Version %q, want 13", first(r, "Sec-Websocket-Version"))
		rf.header = []string{"Sec-WebSocket-Version", "13"}
		return rf
	case !validKey(r.values("Sec-Websocket-Key")):
		return bad(http.StatusBadRequest, "Sec-WebSocket-Key must be one base64-encoded 16-byte value")
	case len(origins) > 0 && !slices.Contains(origins, first(r, "Origin")):
		return &refusal{
			status: http.StatusForbidden,
			msg:    fmt.Sprintf("origin %q is not allowed (-origin)", first(r, "Origin")),
			result: protocol.ResultRejected,
		}
	}
	return nil
}

// admit is the answer to an upgrade request that has been read: a refusal
// (shutting down, a bad request, over -max-conns), or nil with a
// -max-conns place taken, which the caller gives back when the connection
// ends.
func admit(closing bool, r *http.Request, cfg Settings, gate *conns.Gate, f *faults.Injector) *refusal {
	return admitHead(closing, (*httpHead)(r), cfg, gate, f)
}

// admitHead is admit on any requestHead.
func admitHead(closing bool, r requestHead, cfg Settings, gate *conns.Gate, f *faults.Injector) *refusal {
	if closing {
		return shuttingDown()
	}
	if rf := checkHead(r, cfg.Origins); rf != nil {
		return rf
	}
	chosen, _, rf := subprotocol(r, cfg.Subprotocols)
	if rf != nil {
		return rf
	}
	if chosen == "" && cfg.SubprotocolRequired {
		return noSubprotocol(cfg.Subprotocols)
	}
	if f.Reject() {
		// -fault-reject: a valid request, refused as an overloaded server
		// would refuse it.
		return faultReject()
	}
	if !gate.TryAcquire() {
		return overCap(cfg.MaxConns)
	}
	return nil
}

// Refusals that do not depend on the request.
func shuttingDown() *refusal {
	return &refusal{status: http.StatusServiceUnavailable, msg: "shutting down", result: protocol.ResultRejected}
}

func overCap(maxConns int) *refusal {
	return &refusal{
		status: http.StatusServiceUnavailable,
		msg:    fmt.Sprintf("connection cap reached (-max-conns %d)", maxConns),
		header: []string{"Retry-After", "1"},
		result: protocol.ResultRejected,
		capped: true,
	}
}

// write answers through net/http, as http.Error does, and closes the
// connection after the answer: one handshake attempt per connection keeps
// the accounting simple.
func (rf *refusal) write(w http.ResponseWriter) {
	h := w.Header()
	for i := 0; i+1 < len(rf.header); i += 2 {
		h.Set(rf.header[i], rf.header[i+1])
	}
	h.Set("Connection", "close")
	http.Error(w, rf.msg, rf.status)
}

// bytes is the same answer as raw HTTP/1.1, for gnet.
func (rf *refusal) bytes() []byte {
	body := rf.msg + "\n"
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", rf.status, http.StatusText(rf.status))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n")
	for i := 0; i+1 < len(rf.header); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", rf.header[i], rf.header[i+1])
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// hasToken reports whether the comma-separated header name holds token,
// ignoring case (Connection: keep-alive, Upgrade).
func hasToken(h http.Header, name, token string) bool {
	return hasTokenIn(h.Values(name), token)
}

// hasTokenIn is hasToken on a header field's values.
func hasTokenIn(values []string, token string) bool {
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(item), token) {
				return true
			}
		}
	}
	return false
}

func validKey(keys []string) bool {
	if len(keys) != 1 {
		return false
	}
	key := strings.TrimSpace(keys[0])
	if len(key) == 24 {
		// The usual key, decoded on the stack: the same answer as below.
		var b [18]byte
		n, err := base64.StdEncoding.Decode(b[:], []byte(key))
		return err == nil && n == 16
	}
	b, err := base64.StdEncoding.DecodeString(key)
	return err == nil && len(b) == 16
}

// acceptKey is Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 4.2.2).
func acceptKey(key string) string { return string(appendAcceptKey(nil, key)) }

// appendAcceptKey appends acceptKey(key) to dst, allocating nothing for a
// key of the usual length.
func appendAcceptKey(dst []byte, key string) []byte {
	var buf [64]byte
	h := sha1.Sum(append(append(buf[:0], strings.TrimSpace(key)...), "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"...))
	return base64.StdEncoding.AppendEncode(dst, h[:])
}

package wsserver

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/servers/internal/conns"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/protocol"
)

// key is a valid Sec-WebSocket-Key: 16 bytes, base64-encoded.
const key = "dGhlIHNhbXBsZSBub25jZQ=="

// upgradeReq is a valid upgrade request; change edits it before use.
func upgradeReq(change func(r *http.Request)) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/any/path?x=1", nil)
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", key)
	if change != nil {
		change(r)
	}
	return r
}

func TestCheckUpgrade(t *testing.T) {
	set := func(name, value string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set(name, value) }
	}
	del := func(name string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Del(name) }
	}
	cases := []struct {
		name    string
		change  func(*http.Request)
		origins []string
		status  int    // 0: upgrade
		result  string // the handshake result counted
		msg     string // in the message
		header  []string
	}{
		{name: "valid", change: nil},
		{name: "upgrade token any case", change: set("Upgrade", "WebSocket")},
		{name: "upgrade among tokens", change: set("Upgrade", "h2c, websocket")},
		{name: "connection among tokens", change: set("Connection", "keep-alive, Upgrade")},
		{name: "connection lower case", change: set("Connection", "upgrade")},
		{name: "connection in two fields", change: func(r *http.Request) {
			r.Header["Connection"] = []string{"keep-alive", "upgrade"}
		}},
		{name: "key with spaces around", change: set("Sec-WebSocket-Key", "  "+key+" ")},
		{name: "any path", change: func(r *http.Request) { r.URL.Path = "/" }},

		{name: "no upgrade header", change: del("Upgrade"), status: 426, result: protocol.ResultFailed,
			msg: "this is a WebSocket endpoint", header: []string{"Upgrade", "websocket", "Sec-WebSocket-Version", "13"}},
		{name: "upgrade to another protocol", change: set("Upgrade", "h2c"), status: 426, result: protocol.ResultFailed,
			msg: "Upgrade: websocket"},
		{name: "upgrade token as a substring", change: set("Upgrade", "websockets"), status: 426, result: protocol.ResultFailed},
		{name: "plain GET", change: func(r *http.Request) { r.Header = http.Header{} }, status: 426, result: protocol.ResultFailed},

		{name: "POST", change: func(r *http.Request) { r.Method = http.MethodPost }, status: 405, result: protocol.ResultFailed,
			msg: "method POST, want GET", header: []string{"Allow", "GET"}},
		{name: "HEAD", change: func(r *http.Request) { r.Method = http.MethodHead }, status: 405, result: protocol.ResultFailed},
		{name: "lower-case get", change: func(r *http.Request) { r.Method = "get" }, status: 405, result: protocol.ResultFailed},

		{name: "HTTP/1.0", change: func(r *http.Request) { r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.0", 1, 0 },
			status: 400, result: protocol.ResultFailed, msg: "HTTP/1.0, want HTTP/1.1"},
		{name: "HTTP/2 is at least 1.1", change: func(r *http.Request) { r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0 }},

		{name: "no connection header", change: del("Connection"), status: 400, result: protocol.ResultFailed,
			msg: "the Connection header lacks upgrade"},
		{name: "connection keep-alive only", change: set("Connection", "keep-alive"), status: 400, result: protocol.ResultFailed},
		{name: "connection upgrades as a substring", change: set("Connection", "upgrades"), status: 400, result: protocol.ResultFailed},

		{name: "no version", change: del("Sec-WebSocket-Version"), status: 426, result: protocol.ResultFailed,
			msg: `Sec-WebSocket-Version "", want 13`, header: []string{"Sec-WebSocket-Version", "13"}},
		{name: "version 8", change: set("Sec-WebSocket-Version", "8"), status: 426, result: protocol.ResultFailed,
			msg: `Sec-WebSocket-Version "8"`, header: []string{"Sec-WebSocket-Version", "13"}},
		{name: "version list", change: set("Sec-WebSocket-Version", "13, 8"), status: 426, result: protocol.ResultFailed},

		{name: "no key", change: del("Sec-WebSocket-Key"), status: 400, result: protocol.ResultFailed,
			msg: "Sec-WebSocket-Key must be"},
		{name: "key not base64", change: set("Sec-WebSocket-Key", "not base64!"), status: 400, result: protocol.ResultFailed},
		{name: "key of 15 bytes", change: set("Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAA"), status: 400, result: protocol.ResultFailed},
		{name: "two keys", change: func(r *http.Request) { r.Header.Add("Sec-WebSocket-Key", key) },
			status: 400, result: protocol.ResultFailed},

		{name: "origin allowed", change: set("Origin", "https://a.test"), origins: []string{"https://b.test", "https://a.test"}},
		{name: "origin any when none listed", change: set("Origin", "https://evil.test")},
		{name: "origin refused", change: set("Origin", "https://evil.test"), origins: []string{"https://a.test"},
			status: 403, result: protocol.ResultRejected, msg: `origin "https://evil.test" is not allowed (-origin)`},
		{name: "origin missing", origins: []string{"https://a.test"}, status: 403, result: protocol.ResultRejected,
			msg: `origin ""`},
		{name: "origin compared exactly", change: set("Origin", "https://A.test"), origins: []string{"https://a.test"},
			status: 403, result: protocol.ResultRejected},

		// The first failed check is the answer: a POST without Upgrade is
		// told it reached a WebSocket endpoint.
		{name: "order: upgrade before method", change: func(r *http.Request) { r.Method = http.MethodPost; r.Header.Del("Upgrade") },
			status: 426, result: protocol.ResultFailed, msg: "this is a WebSocket endpoint"},
		{name: "order: version before key", change: func(r *http.Request) {
			r.Header.Set("Sec-WebSocket-Version", "7")
			r.Header.Del("Sec-WebSocket-Key")
		}, status: 426, result: protocol.ResultFailed, msg: "Sec-WebSocket-Version"},
		{name: "order: key before origin", change: del("Sec-WebSocket-Key"), origins: []string{"https://a.test"},
			status: 400, result: protocol.ResultFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rf := checkUpgrade(upgradeReq(c.change), c.origins)
			if c.status == 0 {
				if rf != nil {
					t.Fatalf("refused with %d %q, want the upgrade", rf.status, rf.msg)
				}
				return
			}
			if rf == nil {
				t.Fatalf("upgraded, want %d", c.status)
			}
			if rf.status != c.status || rf.result != c.result {
				t.Errorf("got %d (%s), want %d (%s)", rf.status, rf.result, c.status, c.result)
			}
			if !strings.Contains(rf.msg, c.msg) || strings.Contains(rf.msg, "\n") {
				t.Errorf("message %q, want one line holding %q", rf.msg, c.msg)
			}
			if c.header != nil && !slicesEqual(rf.header, c.header) {
				t.Errorf("header %q, want %q", rf.header, c.header)
			}
		})
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func TestValidKey(t *testing.T) {
	cases := []struct {
		keys []string
		want bool
	}{
		{[]string{key}, true},
		{[]string{"AAAAAAAAAAAAAAAAAAAAAA=="}, true},
		{[]string{" " + key + "\t"}, true},
		{nil, false},
		{[]string{}, false},
		{[]string{""}, false},
		{[]string{key, key}, false},
		{[]string{"AAAAAAAAAAAAAAAAAAAAAA"}, false},       // unpadded
		{[]string{"AAAAAAAAAAAAAAAAAAAAAAA="}, false},     // 17 bytes
		{[]string{"AAAAAAAAAAAAAAAAAAAA"}, false},         // 15 bytes
		{[]string{"AAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, false}, // 21 bytes
		{[]string{"dGhlIHNhbXBsZSBub25jZQ-_"}, false},     // URL alphabet
		{[]string{"dGhlIHNhbXB sZSBub25jZQ=="}, false},    // a space inside
	}
	for _, c := range cases {
		if got := validKey(c.keys); got != c.want {
			t.Errorf("validKey(%q) = %v, want %v", c.keys, got, c.want)
		}
	}
}

func TestHasToken(t *testing.T) {
	h := http.Header{"Connection": {"keep-alive, Upgrade", " close "}, "Empty": {""}}
	cases := []struct {
		name, token string
		want        bool
	}{
		{"Connection", "upgrade", true},
		{"Connection", "UPGRADE", true},
		{"Connection", "keep-alive", true},
		{"Connection", "close", true},
		{"Connection", "up", false},
		{"Connection", "keep-alive, Upgrade", false},
		{"Empty", "", true}, // an empty field holds the empty token
		{"Missing", "", false},
		{"Missing", "upgrade", false},
	}
	for _, c := range cases {
		if got := hasToken(h, c.name, c.token); got != c.want {
			t.Errorf("hasToken(%s, %q) = %v, want %v", c.name, c.token, got, c.want)
		}
	}
}

// TestAcceptKey checks the example of RFC 6455 1.3.
func TestAcceptKey(t *testing.T) {
	for _, k := range []string{key, " " + key + " "} {
		if got := acceptKey(k); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
			t.Errorf("acceptKey(%q) = %q", k, got)
		}
	}
}

func TestAdmit(t *testing.T) {
	gate := conns.NewGate(1)
	cfg := Settings{MaxConns: 1}
	if rf := admit(false, upgradeReq(nil), cfg, gate, nil); rf != nil {
		t.Fatalf("first: %d %s", rf.status, rf.msg)
	}
	// The place is taken: the next is over the cap until it is given back.
	rf := admit(false, upgradeReq(nil), cfg, gate, nil)
	if rf == nil || rf.status != 503 || rf.result != protocol.ResultRejected || !slicesEqual(rf.header, []string{"Retry-After", "1"}) {
		t.Fatalf("over the cap: %+v", rf)
	}
	if !strings.Contains(rf.msg, "-max-conns 1") {
		t.Errorf("over the cap: %q does not name the flag", rf.msg)
	}
	gate.Release()
	if rf := admit(false, upgradeReq(nil), cfg, gate, nil); rf != nil {
		t.Fatalf("after a release: %d %s", rf.status, rf.msg)
	}
	gate.Release()

	// A bad request is refused as bad before the cap is looked at, and
	// takes no place.
	full := conns.NewGate(1)
	full.TryAcquire()
	if rf := admit(false, upgradeReq(func(r *http.Request) { r.Method = "PUT" }), cfg, full, nil); rf == nil || rf.status != 405 {
		t.Errorf("bad request at the cap: %+v", rf)
	}
	if rf := admit(false, upgradeReq(func(r *http.Request) { r.Method = "PUT" }), cfg, gate, nil); rf == nil || rf.status != 405 {
		t.Errorf("bad request: %+v", rf)
	} else if !gate.TryAcquire() {
		t.Error("a refused request kept a place")
	}
	gate.Release()

	// Shutting down comes first, even for a bad request.
	if rf := admit(true, upgradeReq(func(r *http.Request) { r.Header.Del("Upgrade") }), cfg, gate, nil); rf == nil || rf.status != 503 || rf.msg != "shutting down" {
		t.Errorf("closing: %+v", rf)
	}

	// -fault-reject 1: every valid request refused, no place taken.
	f := faults.New(faults.Modes{Reject: 1}, nil)
	rf = admit(false, upgradeReq(nil), cfg, gate, f)
	if rf == nil || rf.status != 503 || rf.result != protocol.ResultRejected || !strings.Contains(rf.msg, "-fault-reject") {
		t.Errorf("fault: %+v", rf)
	}
	if !gate.TryAcquire() {
		t.Error("a faulted request kept a place")
	}
	gate.Release()
	if rf := admit(false, upgradeReq(func(r *http.Request) { r.Header.Del("Upgrade") }), cfg, gate, f); rf == nil || rf.status != 426 {
		t.Errorf("a bad request is bad before a fault: %+v", rf)
	}
}

// refusals are one of each kind of answer, for the response tests.
func refusals() map[string]*refusal {
	return map[string]*refusal{
		"not an upgrade": checkUpgrade(upgradeReq(func(r *http.Request) { r.Header.Del("Upgrade") }), nil),
		"method":         checkUpgrade(upgradeReq(func(r *http.Request) { r.Method = http.MethodPost }), nil),
		"version":        checkUpgrade(upgradeReq(func(r *http.Request) { r.Header.Set("Sec-WebSocket-Version", "8") }), nil),
		"key":            checkUpgrade(upgradeReq(func(r *http.Request) { r.Header.Del("Sec-WebSocket-Key") }), nil),
		"origin":         checkUpgrade(upgradeReq(nil), []string{"https://a.test"}),
		"over the cap":   overCap(3),
		"shutting down":  shuttingDown(),
		"fault":          faultReject(),
	}
}

// TestRefusalWrite checks the answer through net/http: the status, the
// message as the body, the refusal's own fields, and Connection: close.
func TestRefusalWrite(t *testing.T) {
	for name, rf := range refusals() {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			rf.write(w)
			resp := w.Result()
			checkRefusal(t, rf, resp)
		})
	}
}

// TestRefusalBytes checks that gnet's raw answer is the one net/http
// gives, read back by net/http's own client parser.
func TestRefusalBytes(t *testing.T) {
	for name, rf := range refusals() {
		t.Run(name, func(t *testing.T) {
			raw := rf.bytes()
			if !bytes.HasPrefix(raw, []byte("HTTP/1.1 ")) || !bytes.Contains(raw, []byte("\r\n\r\n")) {
				t.Fatalf("not an HTTP/1.1 response: %q", raw)
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
			if err != nil {
				t.Fatalf("%v in %q", err, raw)
			}
			checkRefusal(t, rf, resp)
			if !resp.Close {
				t.Error("the response does not close the connection")
			}
			w := httptest.NewRecorder()
			rf.write(w)
			for _, h := range []string{"Content-Type", "X-Content-Type-Options"} {
				if got, want := resp.Header.Get(h), w.Result().Header.Get(h); got != want {
					t.Errorf("%s: gnet %q, net/http %q", h, got, want)
				}
			}
		})
	}
}

func checkRefusal(t *testing.T, rf *refusal, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != rf.status {
		t.Errorf("status %d, want %d", resp.StatusCode, rf.status)
	}
	if string(body) != rf.msg+"\n" {
		t.Errorf("body %q, want %q", body, rf.msg+"\n")
	}
	// A response parsed by net/http has Close set and the field taken
	// out; a recorded one keeps the field.
	if got := resp.Header.Get("Connection"); !resp.Close && !strings.EqualFold(got, "close") {
		t.Errorf("Connection: %q, want close", got)
	}
	if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
		t.Errorf("Content-Type: %q", got)
	}
	for i := 0; i+1 < len(rf.header); i += 2 {
		if got := resp.Header.Get(rf.header[i]); got != rf.header[i+1] {
			t.Errorf("%s: %q, want %q", rf.header[i], got, rf.header[i+1])
		}
	}
}

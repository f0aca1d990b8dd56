package wsserver

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// fastHeads are request heads for the fast reader: plain ones it must
// take, and ones it must leave to net/http.
var fastHeads = []struct {
	head string
	fast bool
}{
	{"GET /chat?room=1 HTTP/1.1\r\nHost: example.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n", true},
	{"GET / HTTP/1.1\r\nhost:   a  \r\nupgrade:WebSocket\r\nconnection: keep-alive, Upgrade\r\nsec-websocket-key: \t" + key + " \r\nSEC-WEBSOCKET-VERSION: 13\r\nOrigin: https://a.test\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\nSec-WebSocket-Extensions: x\r\n\r\n", true},
	{"GET /a%20b/~c;d=e@f:g!$&'()*+,=?x=%41 HTTP/1.1\r\nHost: h\r\n\r\n", true},
	{"GET / HTTP/1.1\r\n\r\n", true}, // no Host: refused as net/http reads it
	{"GET / HTTP/1.1\r\nHost:\r\nUpgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Key: a\r\nSec-WebSocket-Key: b\r\nSec-WebSocket-Version: 8\r\n\r\n", true},
	{"GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n!#$%&'*+-.^_`|~0aZ: v\r\n\r\n", true},
	// Left to net/http.
	{"POST / HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"get / HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"GET / HTTP/1.0\r\nHost: a\r\n\r\n", false},
	{"GET / HTTP/2.0\r\nHost: a\r\n\r\n", false},
	{"GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n", false},
	{"GET * HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"GET /% HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"GET /  HTTP/1.1\r\nHost: a\r\n\r\n", false},
	{"GET / HTTP/1.1\nHost: a\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", false},
	{"GET / HTTP/1.1\r\n Host: a\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost : a\r\n\r\n", false},
	{"GET / HTTP/1.1\r\n: a\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost a\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\ncontent-length: 0\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\nTrailer: x\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\nX\x00: b\r\n\r\n", false},
	{"GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X: y\r\n", maxFastFields) + "\r\n", false},
}

// TestFastRequestAgrees: the fast reader takes the plain heads and leaves
// the others to net/http, and for each head it takes, net/http reads the
// same request, so the upgrade's answer is the same either way.
func TestFastRequestAgrees(t *testing.T) {
	for _, c := range fastHeads {
		fr := &fastRequest{}
		if got := fr.parse([]byte(c.head)); got != c.fast {
			t.Errorf("parse(%q) = %v, want %v", c.head, got, c.fast)
			continue
		}
		if c.fast {
			agree(t, []byte(c.head), fr)
		}
	}
}

// FuzzFastRequest: whatever head the fast reader takes, net/http reads it
// too, alike.
func FuzzFastRequest(f *testing.F) {
	for _, c := range fastHeads {
		f.Add([]byte(c.head))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		end := bytes.Index(head, headerEnd)
		if end < 0 {
			return
		}
		head = head[:end+len(headerEnd)] // as the handshake cuts it
		fr := &fastRequest{}
		if fr.parse(head) {
			agree(t, head, fr)
		}
	})
}

// agree checks that net/http reads head without an error and to the same
// method, version, Host and header values as fr, and that the upgrade
// checks and the deflate answer come out the same from both.
func agree(t *testing.T, head []byte, fr *fastRequest) {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		t.Fatalf("fast reader took %q; net/http: %v", head, err)
	}
	hr := (*httpHead)(req)
	if hr.method() != fr.method() || req.Host != first(fr, "Host") {
		t.Fatalf("%q: net/http %s Host %q, fast %s Host %q", head, req.Method, req.Host, fr.method(), first(fr, "Host"))
	}
	p1, ok1 := hr.proto()
	p2, ok2 := fr.proto()
	if p1 != p2 || ok1 != ok2 {
		t.Fatalf("%q: net/http %s, fast %s", head, p1, p2)
	}
	fields := map[string]bool{}
	for _, f := range fr.fields {
		fields[http.CanonicalHeaderKey(string(f.name))] = true
	}
	for name := range req.Header {
		fields[name] = true
	}
	delete(fields, "Host") // http.ReadRequest moves it to req.Host
	fixed := req.Header.Get("Cache-Control") != "" && len(fr.values("Cache-Control")) == 0
	for name := range fields {
		if name == "Cache-Control" && fixed {
			continue // net/http adds it for Pragma: no-cache
		}
		if got, want := fr.values(name), req.Header.Values(name); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %s: fast %q, net/http %q", head, name, got, want)
		}
	}
	for _, origins := range [][]string{nil, {"https://a.test"}} {
		if got, want := checkHead(fr, origins), checkUpgrade(req, origins); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast %+v, net/http %+v", head, got, want)
		}
	}
	a1, ok1 := negotiateDeflateIn(fr.values(extensionsHeader))
	a2, ok2 := negotiateDeflate(req.Header)
	if a1 != a2 || ok1 != ok2 {
		t.Fatalf("%q: deflate fast %q %v, net/http %q %v", head, a1, ok1, a2, ok2)
	}
	if first(fr, "Sec-Websocket-Key") != req.Header.Get("Sec-WebSocket-Key") {
		t.Fatalf("%q: keys differ", head)
	}
}

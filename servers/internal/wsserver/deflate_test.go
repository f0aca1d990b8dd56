package wsserver

import (
	"net/http"
	"testing"
)

// TestNegotiateDeflate: the answer to each Sec-WebSocket-Extensions offer
// list; "" is no extension. The offers of Autobahn TestSuite's cases 12
// and 13 come first.
func TestNegotiateDeflate(t *testing.T) {
	const (
		base = deflateAnswer
		w15  = deflateAnswer + "; server_max_window_bits=15"
	)
	for _, tc := range []struct {
		name   string
		offers []string // one header line each
		want   string
	}{
		{"autobahn 12, 13.1", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits"}, base},
		{"autobahn 13.2", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover"}, base},
		{"autobahn 13.3 (window 8)", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_max_window_bits=8"}, ""},
		{"autobahn 13.3 (window 9)", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_max_window_bits=9"}, ""},
		{"autobahn 13.4", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_max_window_bits=15"}, w15},
		{"autobahn 13.5", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover; server_max_window_bits=8"}, ""},
		{"autobahn 13.6", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover; server_max_window_bits=15"}, w15},
		{"autobahn 13.7", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover; server_max_window_bits=8, permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover, permessage-deflate; client_no_context_takeover; client_max_window_bits"}, base},

		{"bare", []string{"permessage-deflate"}, base},
		{"browser", []string{"permessage-deflate; client_max_window_bits"}, base},
		{"client window 8", []string{"permessage-deflate; client_max_window_bits=8"}, base},
		{"client window 9", []string{"permessage-deflate; client_max_window_bits=9"}, base},
		{"client window 15", []string{"permessage-deflate; client_max_window_bits=15"}, base},
		{"server window 14", []string{"permessage-deflate; server_max_window_bits=14"}, ""},
		{"quoted value", []string{`permessage-deflate; server_max_window_bits="15"`}, w15},
		{"spaces", []string{"  permessage-deflate ;server_max_window_bits = 15 ;  client_no_context_takeover  "}, w15},
		{"first acceptable of several", []string{"permessage-deflate; server_max_window_bits=10, permessage-deflate; server_max_window_bits=15, permessage-deflate"}, w15},
		{"other extensions first", []string{"x-webkit-deflate-frame, foo; bar=baz, permessage-deflate"}, base},
		{"second header line", []string{"foo", "permessage-deflate; client_max_window_bits"}, base},
		{"empty list elements", []string{" , ,permessage-deflate,"}, base},
		{"other extensions only", []string{"x-webkit-deflate-frame"}, ""},
		{"none", nil, ""},
		{"empty", []string{""}, ""},
		{"name is case-sensitive", []string{"Permessage-Deflate"}, ""},

		// Declined (RFC 7692 5.1): the next offer is tried.
		{"server window 7", []string{"permessage-deflate; server_max_window_bits=7"}, ""},
		{"server window 16", []string{"permessage-deflate; server_max_window_bits=16"}, ""},
		{"server window abc", []string{"permessage-deflate; server_max_window_bits=abc"}, ""},
		{"server window 015", []string{"permessage-deflate; server_max_window_bits=015"}, ""},
		{"server window +15", []string{"permessage-deflate; server_max_window_bits=+15"}, ""},
		{"server window without value", []string{"permessage-deflate; server_max_window_bits"}, ""},
		{"server window empty", []string{"permessage-deflate; server_max_window_bits="}, ""},
		{"server window quoted empty", []string{`permessage-deflate; server_max_window_bits=""`}, ""},
		{"server window quoted space", []string{`permessage-deflate; server_max_window_bits="1 5"`}, ""},
		{"server window twice", []string{"permessage-deflate; server_max_window_bits=15; server_max_window_bits=15"}, ""},
		{"client window 7", []string{"permessage-deflate; client_max_window_bits=7"}, ""},
		{"client window 16", []string{"permessage-deflate; client_max_window_bits=16"}, ""},
		{"client window abc", []string{"permessage-deflate; client_max_window_bits=abc"}, ""},
		{"client window twice", []string{"permessage-deflate; client_max_window_bits; client_max_window_bits"}, ""},
		{"client window twice with values", []string{"permessage-deflate; client_max_window_bits=10; client_max_window_bits=12"}, ""},
		{"no context takeover with a value", []string{"permessage-deflate; client_no_context_takeover=1"}, ""},
		{"no context takeover twice", []string{"permessage-deflate; server_no_context_takeover; server_no_context_takeover"}, ""},
		{"unknown parameter", []string{"permessage-deflate; foo=bar"}, ""},
		{"empty parameter", []string{"permessage-deflate;; client_max_window_bits"}, ""},
		{"trailing semicolon", []string{"permessage-deflate;"}, ""},
		{"unterminated quote", []string{`permessage-deflate; server_max_window_bits="15, permessage-deflate`}, ""},
		{"escaped closing quote", []string{`permessage-deflate; server_max_window_bits="15\"`}, ""},
		{"bad then good", []string{"permessage-deflate; server_max_window_bits=7, permessage-deflate; client_no_context_takeover"}, base},
		{"quoted comma", []string{`permessage-deflate; foo="a,b", permessage-deflate; server_max_window_bits=15`}, w15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.offers {
				h.Add("Sec-WebSocket-Extensions", v)
			}
			answer, ok := negotiateDeflate(h)
			if answer != tc.want || ok != (tc.want != "") {
				t.Errorf("%q: answer %q, %v; want %q", tc.offers, answer, ok, tc.want)
			}
		})
	}
}

// TestChooseDeflate: a library that negotiates by itself sees the bare
// offer, or none.
func TestChooseDeflate(t *testing.T) {
	r := &http.Request{Header: http.Header{"Sec-Websocket-Extensions": {"foo, permessage-deflate; server_max_window_bits=9", "permessage-deflate; server_max_window_bits=15"}}}
	if answer, ok := chooseDeflate(r); !ok || answer != deflateAnswer+"; server_max_window_bits=15" {
		t.Errorf("answer %q, %v", answer, ok)
	}
	if got := r.Header.Values("Sec-WebSocket-Extensions"); len(got) != 1 || got[0] != "permessage-deflate" {
		t.Errorf("the library sees %q, want the bare offer", got)
	}
	r.Header.Set("Sec-WebSocket-Extensions", "permessage-deflate; server_max_window_bits=9")
	if _, ok := chooseDeflate(r); ok {
		t.Error("accepted server_max_window_bits=9")
	}
	if got := r.Header.Values("Sec-WebSocket-Extensions"); len(got) != 0 {
		t.Errorf("the library sees %q, want no offer", got)
	}
}

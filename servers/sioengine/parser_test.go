package sioengine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestParseSIO(t *testing.T) {
	cases := []struct {
		in   string
		want string // typ nsp id attachments data, or "error"
	}{
		{`0`, `0 / -1 0 ""`},
		{`0{"token":"1"}`, `0 / -1 0 "{\"token\":\"1\"}"`},
		{`0/custom,`, `0 /custom -1 0 ""`},
		{`0/random`, `0 /random -1 0 ""`},
		{`2["a",1]`, `2 / -1 0 "[\"a\",1]"`},
		{`2/custom,12["a"]`, `2 /custom 12 0 "[\"a\"]"`},
		{`52-["a",{"_placeholder":true,"num":0}]`, `5 / -1 2 "[\"a\",{\"_placeholder\":true,\"num\":0}]"`},
		{`63-/x,4[1]`, `6 /x 4 3 "[1]"`},
		{`3 1[]`, "error"},
		{`2[1]`, `2 / -1 0 "[1]"`}, // a number names an event
		{`1`, `1 / -1 0 ""`},
		{`1{}`, "error"},          // DISCONNECT carries nothing
		{`4abc`, "error"},         // not JSON
		{`2{}`, "error"},          // an event is an array
		{`2abc["a"]`, "error"},    // garbage before the payload
		{`2[]`, "error"},          // no name
		{`2["connect"]`, "error"}, // reserved
		{`2`, "error"},
		{`7`, "error"},
		{``, "error"},
		{`5-["a"]`, "error"},                    // no count
		{`517-["a"]`, "error"},                  // over MaxAttachments (16)
		{`5x-["a"]`, "error"},                   // not a count
		{`299999999999999999999["a"]`, "error"}, // an id past 2^53
		{`2["b",{"a":"]"}]`, `2 / -1 0 "[\"b\",{\"a\":\"]\"}]"`},
	}
	for _, c := range cases {
		p, err := parseSIO([]byte(c.in), DefaultMaxAttachments)
		got := "error"
		if err == nil {
			got = fmt.Sprintf("%c %s %d %d %q", p.typ, p.nsp, p.id, p.attachments, p.data)
		}
		if got != c.want {
			t.Errorf("parseSIO(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestSplitArray(t *testing.T) {
	for in, want := range map[string]string{
		`["a",1,"2",{"3":[true]}]`:   `"a"|1|"2"|{"3":[true]}`,
		`[ "x" , [1,[2]] , "\"]," ]`: `"x"|[1,[2]]|"\"],"`,
		`[]`:                         ``,
		`[null]`:                     `null`,
	} {
		var parts []string
		for _, e := range splitArray([]byte(in)) {
			parts = append(parts, string(e))
		}
		if got := strings.Join(parts, "|"); got != want {
			t.Errorf("splitArray(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	frames := []*frame{{data: []byte(`42["a"]`)}, {data: []byte{0, 1, 0xff}, binary: true}, pingFrame}
	var body []byte
	for _, f := range frames {
		body = appendPayload(body, f)
	}
	if want := "42[\"a\"]\x1ebAAH/\x1e2"; string(body) != want {
		t.Fatalf("payload %q, want %q", body, want)
	}
	var got []string
	err := decodePayload(body, func(p inPacket) bool {
		got = append(got, fmt.Sprintf("%c %v %q", p.typ, p.binary, p.data))
		return true
	})
	if err != nil || strings.Join(got, ",") != `4 false "2[\"a\"]",4 true "\x00\x01\xff",2 false ""` {
		t.Errorf("decoded %v, %v", got, err)
	}
	for _, bad := range []string{"", "9", "4a\x1e", "b!!"} {
		if err := decodePayload([]byte(bad), func(inPacket) bool { return true }); err == nil {
			t.Errorf("decodePayload(%q): no error", bad)
		}
	}
}

// TestPayloadV3RoundTrip: Engine.IO v3's records, with lengths as
// JavaScript counts them (an emoji is two UTF-16 code units, a é one).
func TestPayloadV3RoundTrip(t *testing.T) {
	frames := []*frame{{data: []byte(`42["é😀"]`)}, {data: []byte{0, 1, 0xff}, binary: true}, pongFrame}
	var body []byte
	for _, f := range frames {
		body = appendPayloadV3(body, f)
	}
	if want := "9:42[\"é😀\"]6:b4AAH/1:3"; string(body) != want {
		t.Fatalf("payload %q, want %q", body, want)
	}
	var got []string
	err := decodePayloadV3(append(body, "0:"...), func(p inPacket) bool {
		got = append(got, fmt.Sprintf("%c %v %q", p.typ, p.binary, p.data))
		return true
	})
	if err != nil || strings.Join(got, ",") != `4 false "2[\"é😀\"]",4 true "\x00\x01\xff",3 false ""` {
		t.Errorf("decoded %v, %v", got, err)
	}
	for _, bad := range []string{"1", ":1", "2:1", "1:9", "x:1", "99999999999:1", "-1:1", "3:b2AA", "4:b4!!", "1:😀"} {
		if err := decodePayloadV3([]byte(bad), func(inPacket) bool { return true }); err == nil {
			t.Errorf("decodePayloadV3(%q): no error", bad)
		}
	}
}

func TestSplitQuery(t *testing.T) {
	cases := []struct{ in, nsp, auth string }{
		{"/custom", "/custom", ""},
		{"/custom?token=a&x=1&x=2", "/custom", `{"token":"a","x":"2"}`},
		{"/?", "/", "{}"},
	}
	for _, c := range cases {
		if nsp, auth := splitQuery(c.in); nsp != c.nsp || string(auth) != c.auth {
			t.Errorf("splitQuery(%q) = %q, %s; want %q, %s", c.in, nsp, auth, c.nsp, c.auth)
		}
	}
}

func TestEncodeEvent(t *testing.T) {
	args := []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`{"_placeholder":true,"num":0}`)}
	cases := []struct {
		nsp, event string
		id         int64
		atts       [][]byte
		want       string
	}{
		{"/", "message-back", -1, nil, `42["message-back",1,{"_placeholder":true,"num":0}]`},
		{"/custom", "auth", -1, nil, `42/custom,["auth",1,{"_placeholder":true,"num":0}]`},
		{"/", "", 7, nil, `437[1,{"_placeholder":true,"num":0}]`},
		{"/", "b", -1, [][]byte{{1}}, `451-["b",1,{"_placeholder":true,"num":0}]`},
		{"/x", "", 3, [][]byte{{1}, {2}}, `462-/x,3[1,{"_placeholder":true,"num":0}]`},
	}
	for _, c := range cases {
		frames := encodeEvent(c.nsp, c.event, c.id, args, c.atts, false)
		if got := string(frames[0].data); got != c.want || len(frames) != 1+len(c.atts) {
			t.Errorf("encodeEvent(%s, %q, %d) = %s (%d frames), want %s", c.nsp, c.event, c.id, got, len(frames), c.want)
		}
		for _, f := range frames {
			f.release()
		}
	}
	if got := string(encodeEvent("/", "", 1, nil, nil, true)[0].data); got != "431[]" {
		t.Errorf("an empty ack: %s", got)
	}
}

// FuzzParseSIO: any packet a client sends is parsed or refused, without a
// panic, and the event an accepted one names can be split.
func FuzzParseSIO(f *testing.F) {
	for _, seed := range []string{`2["a",1]`, `451-["x",{"_placeholder":true,"num":0}]`, `0/custom,{"t":1}`, `3/a,9[]`, `2[`, `5-`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := parseSIO([]byte(in), DefaultMaxAttachments)
		if err == nil && (p.typ == sioEvent || p.typ == sioBinaryEvent) && len(splitArray(p.data)) == 0 {
			t.Errorf("%q: an accepted event without a name", in)
		}
	})
}

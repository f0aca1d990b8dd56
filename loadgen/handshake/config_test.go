package handshake

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
)

func TestParseFlagsDefaults(t *testing.T) {
	cfg, err := ParseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Common: scenario.Common{URL: DefaultURL, Admin: "http://127.0.0.1:9100"},
		N:      DefaultN, Deadline: DefaultDeadline, Transport: DefaultTransport, Namespace: "/", Echo: true,
	}
	if cfg != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func(*Config)
	}{
		{[]string{"-url", "http://10.0.0.7:3000/", "-n", "500", "-deadline", "2s", "-transport", "polling,websocket", "-namespace", "/custom", "-echo=false", "-json", "-"},
			func(c *Config) {
				c.URL, c.N, c.Deadline, c.Transport, c.Namespace, c.Echo, c.JSON = "http://10.0.0.7:3000", 500, 2*time.Second, "polling,websocket", "/custom", false, "-"
				c.Admin = "http://10.0.0.7:9100" // the target's host
			}},
		{[]string{"-url", "http://[::1]:8080"}, func(c *Config) { c.URL, c.Admin = "http://[::1]:8080", "http://[::1]:9100" }},
		{[]string{"-admin", ""}, func(c *Config) { c.Admin = "" }},
		{[]string{"-admin", "127.0.0.1:9200"}, func(c *Config) { c.Admin = "http://127.0.0.1:9200" }},
		{[]string{"-admin", "https://stats.example:443/"}, func(c *Config) { c.Admin = "https://stats.example:443" }},
		{[]string{"-transport", "polling"}, func(c *Config) { c.Transport = "polling" }},
	} {
		got, err := ParseFlags(tc.args)
		if err != nil {
			t.Errorf("ParseFlags(%q): %v", tc.args, err)
			continue
		}
		want := Config{Common: scenario.Common{URL: DefaultURL, Admin: "http://127.0.0.1:9100"}, N: DefaultN, Deadline: DefaultDeadline, Transport: DefaultTransport, Namespace: "/", Echo: true}
		tc.want(&want)
		if got != want {
			t.Errorf("ParseFlags(%q):\n got %+v\nwant %+v", tc.args, got, want)
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the message: the flag, and the accepted form
	}{
		{[]string{"-n", "0"}, "flag -n: want an integer from 1 to"},
		{[]string{"-n", "many"}, "flag -n: want an integer"},
		{[]string{"-n", "2000000"}, "flag -n: want an integer"},
		{[]string{"-deadline", "15"}, "flag -deadline: want a positive duration"},
		{[]string{"-deadline", "-1s"}, "flag -deadline: want a positive duration"},
		{[]string{"-transport", "webtransport"}, "flag -transport: want websocket, polling, polling,websocket"},
		{[]string{"-transport", "websocket,polling"}, "flag -transport: want"},
		{[]string{"-url", "127.0.0.1:8080"}, "flag -url: want http://HOST:PORT"},
		{[]string{"-url", "ws://127.0.0.1:8080"}, "flag -url: want http://HOST:PORT"},
		{[]string{"-url", "http://127.0.0.1:8080/custom"}, "flag -url: want http://HOST:PORT or https://HOST:PORT (the namespace is -namespace)"},
		{[]string{"-namespace", "custom"}, "flag -namespace: want a path starting with /"},
		{[]string{"-admin", "http://127.0.0.1:9100/stats"}, "flag -admin: want http://HOST:PORT"},
		{[]string{"-echo=maybe"}, "-echo"},
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"500"}, `unexpected argument "500"`},
	} {
		_, err := ParseFlags(tc.args)
		if err == nil {
			t.Errorf("ParseFlags(%q) = nil error, want one containing %q", tc.args, tc.want)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("ParseFlags(%q) = %q, want one line containing %q", tc.args, msg, tc.want)
		}
	}
	if _, err := ParseFlags([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("ParseFlags(-h) = %v, want flag.ErrHelp", err)
	}
}

func TestUsage(t *testing.T) {
	var b strings.Builder
	Usage(&b)
	for _, name := range []string{"-url", "-n", "-deadline", "-transport", "-namespace", "-echo", "-json", "-admin"} {
		if !strings.Contains(b.String(), "  "+name+" ") && !strings.Contains(b.String(), "  "+name+"\n") {
			t.Errorf("usage does not list %s:\n%s", name, b.String())
		}
	}
}

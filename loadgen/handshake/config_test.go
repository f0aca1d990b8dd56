package handshake

import (
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/scenario/scenariotest"
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
	scenariotest.RefusesFlags(t, ParseFlags, []scenariotest.BadFlag{
		{Args: []string{"-n", "0"}, Want: "flag -n: want an integer from 1 to"},
		{Args: []string{"-n", "many"}, Want: "flag -n: want an integer"},
		{Args: []string{"-n", "2000000"}, Want: "flag -n: want an integer"},
		{Args: []string{"-deadline", "15"}, Want: "flag -deadline: want a positive duration"},
		{Args: []string{"-deadline", "-1s"}, Want: "flag -deadline: want a positive duration"},
		{Args: []string{"-transport", "webtransport"}, Want: "flag -transport: want websocket, polling, polling,websocket"},
		{Args: []string{"-transport", "websocket,polling"}, Want: "flag -transport: want"},
		{Args: []string{"-url", "127.0.0.1:8080"}, Want: "flag -url: want http://HOST:PORT"},
		{Args: []string{"-url", "ws://127.0.0.1:8080"}, Want: "flag -url: want http://HOST:PORT"},
		{Args: []string{"-url", "http://127.0.0.1:8080/custom"}, Want: "flag -url: want http://HOST:PORT or https://HOST:PORT (the namespace is -namespace)"},
		{Args: []string{"-namespace", "custom"}, Want: "flag -namespace: want a path starting with /"},
		{Args: []string{"-admin", "http://127.0.0.1:9100/stats"}, Want: "flag -admin: want http://HOST:PORT"},
		{Args: []string{"-echo=maybe"}, Want: "-echo"},
		{Args: []string{"-bogus"}, Want: "-bogus"},
		{Args: []string{"500"}, Want: `unexpected argument "500"`},
	})
}

func TestUsage(t *testing.T) {
	scenariotest.ListsFlags(t, Usage, "-url", "-n", "-deadline", "-transport", "-namespace", "-echo", "-json", "-admin")
}

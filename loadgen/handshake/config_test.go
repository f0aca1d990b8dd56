package handshake

import (
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/scenario/scenariotest"
)

// defaults is the configuration that no flag gives.
var defaults = Config{
	Common: scenario.Common{URL: DefaultURL, Admin: "http://127.0.0.1:9100"},
	N:      DefaultN, Deadline: DefaultDeadline, Transport: DefaultTransport, Namespace: "/", Echo: true,
}

func TestParseFlags(t *testing.T) {
	scenariotest.ParsesFlags(t, ParseFlags, defaults, []scenariotest.GoodFlag[Config]{
		{Args: nil, Want: func(*Config) {}},
		{Args: []string{"-url", "http://10.0.0.7:3000/", "-n", "500", "-deadline", "2s", "-transport", "polling,websocket", "-namespace", "/custom", "-echo=false", "-json", "-"}, Want: func(c *Config) {
			c.URL, c.N, c.Deadline, c.Transport, c.Namespace, c.Echo, c.JSON = "http://10.0.0.7:3000", 500, 2*time.Second, "polling,websocket", "/custom", false, "-"
			c.Admin = "http://10.0.0.7:9100" // the target's host
		}},
		{Args: []string{"-url", "http://[::1]:8080"}, Want: func(c *Config) { c.URL, c.Admin = "http://[::1]:8080", "http://[::1]:9100" }},
		{Args: []string{"-admin", ""}, Want: func(c *Config) { c.Admin = "" }},
		{Args: []string{"-admin", "127.0.0.1:9200"}, Want: func(c *Config) { c.Admin = "http://127.0.0.1:9200" }},
		{Args: []string{"-admin", "https://stats.example:443/"}, Want: func(c *Config) { c.Admin = "https://stats.example:443" }},
		{Args: []string{"-transport", "polling"}, Want: func(c *Config) { c.Transport = "polling" }},
	})
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

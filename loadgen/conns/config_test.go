package conns

import (
	"net/netip"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/scenario/scenariotest"
)

func TestParseFlags(t *testing.T) {
	base := Config{Common: scenario.Common{URL: DefaultURL, Admin: "http://127.0.0.1:9100"}, N: DefaultN, Batch: DefaultBatch, Hold: DefaultHold, Timeout: DefaultTimeout, Namespace: DefaultNamespace, Loop: true, Status: 200}
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	scenariotest.ParsesFlags(t, ParseFlags, base, []scenariotest.GoodFlag[Config]{
		{Args: nil, Want: func(*Config) {}},
		{Args: []string{"-url", "ws://10.0.0.7:3000", "-n", "19000", "-batch", "500", "-sources", "127.0.0.1-127.0.0.3", "-hold", "0", "-timeout", "1s", "-pid", "42", "-json", "out.json"}, Want: func(c *Config) {
			c.URL, c.N, c.Batch, c.Sources, c.Hold, c.Timeout, c.PID, c.JSON = "ws://10.0.0.7:3000/", 19000, 500, addrs("127.0.0.1", "127.0.0.2", "127.0.0.3"), 0, time.Second, 42, "out.json"
			c.Admin = "http://10.0.0.7:9100"
		}},
		{Args: []string{"-url", "tcp://127.0.0.1:7000", "-n", "10"}, Want: func(c *Config) { c.URL, c.N, c.Batch = "tcp://127.0.0.1:7000", 10, 10 }}, // a batch is at most -n
		{Args: []string{"-sources", "127.0.0.9, 127.0.0.2-127.0.0.3,::1"}, Want: func(c *Config) { c.Sources = addrs("127.0.0.9", "127.0.0.2", "127.0.0.3", "::1") }},
		{Args: []string{"-sources", "127.0.0.255-127.0.1.0"}, Want: func(c *Config) { c.Sources = addrs("127.0.0.255", "127.0.1.0") }},
		{Args: []string{"-admin", ""}, Want: func(c *Config) { c.Admin = "" }},
		{Args: []string{"-free-os-memory"}, Want: func(c *Config) { c.FreeOSMemory = true }},
		{Args: []string{"-loop=false"}, Want: func(c *Config) { c.Loop = false }},
		{Args: []string{"-echo", "128"}, Want: func(c *Config) { c.Echo = 128 }},
		{Args: []string{"-get", "-url", "http://127.0.0.1:8080", "-status", "426"}, Want: func(c *Config) { // nothing to hold by default
			c.Get, c.Status, c.URL, c.Hold, c.Admin = true, 426, "http://127.0.0.1:8080/", 0, "http://127.0.0.1:9100"
		}},
		{Args: []string{"-url", "ws://127.0.0.1:8080/socket.io/?EIO=4&transport=polling", "-namespace", "/custom"}, Want: func(c *Config) {
			c.URL, c.Namespace = "ws://127.0.0.1:8080/socket.io/?EIO=4&transport=polling", "/custom"
		}},
	})
}

func TestParseFlagsErrors(t *testing.T) {
	scenariotest.RefusesFlags(t, ParseFlags, []scenariotest.BadFlag{
		{Args: []string{"-url", "http://127.0.0.1:8080"}, Want: `invalid value "http://127.0.0.1:8080" for flag -url: an http:// URL is for -get (one GET per connection)`},
		{Args: []string{"-url", "ftp://127.0.0.1:8080"}, Want: "flag -url: want ws://HOST:PORT/PATH, wss://HOST:PORT/PATH, tcp://HOST:PORT or tls://HOST:PORT"},
		{Args: []string{"-get"}, Want: "flag -url: -get wants http://HOST:PORT/PATH"},
		{Args: []string{"-get", "-url", "http://127.0.0.1:8080/", "-echo", "10"}, Want: "flag -echo: not with -get"},
		{Args: []string{"-status", "426"}, Want: "flag -status: only with -get"},
		{Args: []string{"-get", "-url", "http://127.0.0.1:8080/", "-status", "99"}, Want: "flag -status: want an integer from 100 to 599"},
		{Args: []string{"-echo", "-1"}, Want: "flag -echo: want an integer from 0 to 1048576"},
		{Args: []string{"-url", "ws://127.0.0.1:8080/socket.io/", "-echo", "10"}, Want: "flag -echo: not for a Socket.IO URL"},
		{Args: []string{"-url", "ws://127.0.0.1"}, Want: "flag -url: want ws://"},
		{Args: []string{"-n", "0"}, Want: "flag -n: want an integer from 1 to 10000000"},
		{Args: []string{"-n", "1e3"}, Want: "flag -n: want an integer"},
		{Args: []string{"-batch", "-1"}, Want: "flag -batch: want an integer from 1"},
		{Args: []string{"-sources", "127.0.0.8-127.0.0.1"}, Want: "flag -sources: \"127.0.0.8-127.0.0.1\" is not a range: want FIRST-LAST of one family, FIRST <= LAST"},
		{Args: []string{"-sources", "127.0.0.1-::1"}, Want: "flag -sources: \"127.0.0.1-::1\" is not a range"},
		{Args: []string{"-sources", "localhost"}, Want: "flag -sources: \"localhost\" is not an address: want 127.0.0.1-127.0.0.8 or 127.0.0.1,127.0.0.2"},
		{Args: []string{"-sources", ""}, Want: "flag -sources: \"\" is not an address"},
		{Args: []string{"-sources", "10.0.0.0-10.0.255.255"}, Want: "flag -sources: more than 4096 addresses"},
		{Args: []string{"-hold", "-1s"}, Want: "flag -hold: want a duration of 0 or more"},
		{Args: []string{"-timeout", "0"}, Want: "flag -timeout: want a positive duration"},
		{Args: []string{"-admin", "ftp://x:1"}, Want: "flag -admin: want http://HOST:PORT"},
		{Args: []string{"-pid", "x"}, Want: "flag -pid: want a process id"},
		{Args: []string{"-free-os-memory", "-admin", ""}, Want: "flag -free-os-memory: needs the target's admin listener (-admin)"},
		{Args: []string{"-url", "ws://127.0.0.1:8080/socket.io/?transport=polling", "-sources", "127.0.0.1-127.0.0.2"}, Want: "flag -sources: this Socket.IO URL (/socket.io/ over polling, TLS, or with -loop=false) is dialled by the zishang520 client, which binds no source address"},
		{Args: []string{"-url", "ws://127.0.0.1:8080/socket.io/", "-loop=false", "-sources", "127.0.0.1-127.0.0.2"}, Want: "flag -sources: this Socket.IO URL (/socket.io/ over polling, TLS, or with -loop=false) is dialled by the zishang520 client, which binds no source address"},
		{Args: []string{"-url", "ws://127.0.0.1:8080/socket.io/?EIO=3&transport=websocket"}, Want: "EIO=3: the Socket.IO client speaks Engine.IO 4 (EIO=4) only"},
		{Args: []string{"-url", "ws://127.0.0.1:8080/socket.io/?transport=webtransport"}, Want: "transport=webtransport: want websocket or polling"},
		{Args: []string{"-namespace", "/custom"}, Want: "flag -namespace: only for a Socket.IO URL (ws://HOST:PORT/socket.io/)"},
		{Args: []string{"-url", "ws://127.0.0.1:8080/socket.io", "-namespace", "custom"}, Want: "flag -namespace: want a path starting with /"},
		{Args: []string{"-json"}, Want: "flag needs an argument: -json"},
		{Args: []string{"extra"}, Want: `unexpected argument "extra"`},
	})
	scenariotest.ListsFlags(t, Usage, "-url", "-n", "-batch", "-sources", "-hold", "-timeout", "-admin", "-pid", "-json", "-echo", "-get", "-status")
}

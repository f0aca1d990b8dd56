package conns

import (
	"errors"
	"flag"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
)

func TestParseFlags(t *testing.T) {
	base := Config{Common: scenario.Common{URL: DefaultURL, Admin: "http://127.0.0.1:9100"}, N: DefaultN, Batch: DefaultBatch, Hold: DefaultHold, Timeout: DefaultTimeout, Namespace: DefaultNamespace}
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want func(*Config)
	}{
		{nil, func(*Config) {}},
		{[]string{"-url", "ws://10.0.0.7:3000", "-n", "19000", "-batch", "500", "-sources", "127.0.0.1-127.0.0.3", "-hold", "0", "-timeout", "1s", "-pid", "42", "-json", "out.json"},
			func(c *Config) {
				c.URL, c.N, c.Batch, c.Sources, c.Hold, c.Timeout, c.PID, c.JSON = "ws://10.0.0.7:3000/", 19000, 500, addrs("127.0.0.1", "127.0.0.2", "127.0.0.3"), 0, time.Second, 42, "out.json"
				c.Admin = "http://10.0.0.7:9100"
			}},
		{[]string{"-url", "tcp://127.0.0.1:7000", "-n", "10"}, func(c *Config) { c.URL, c.N, c.Batch = "tcp://127.0.0.1:7000", 10, 10 }}, // a batch is at most -n
		{[]string{"-sources", "127.0.0.9, 127.0.0.2-127.0.0.3,::1"}, func(c *Config) { c.Sources = addrs("127.0.0.9", "127.0.0.2", "127.0.0.3", "::1") }},
		{[]string{"-sources", "127.0.0.255-127.0.1.0"}, func(c *Config) { c.Sources = addrs("127.0.0.255", "127.0.1.0") }},
		{[]string{"-admin", ""}, func(c *Config) { c.Admin = "" }},
		{[]string{"-free-os-memory"}, func(c *Config) { c.FreeOSMemory = true }},
		{[]string{"-url", "ws://127.0.0.1:8080/socket.io/?EIO=4&transport=polling", "-namespace", "/custom"}, func(c *Config) {
			c.URL, c.Namespace = "ws://127.0.0.1:8080/socket.io/?EIO=4&transport=polling", "/custom"
		}},
	} {
		got, err := ParseFlags(tc.args)
		if err != nil {
			t.Errorf("ParseFlags(%q): %v", tc.args, err)
			continue
		}
		want := base
		tc.want(&want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseFlags(%q):\n got %+v\nwant %+v", tc.args, got, want)
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-url", "http://127.0.0.1:8080"}, "flag -url: want ws://HOST:PORT/PATH, wss://HOST:PORT/PATH, tcp://HOST:PORT or tls://HOST:PORT"},
		{[]string{"-url", "ws://127.0.0.1"}, "flag -url: want ws://"},
		{[]string{"-n", "0"}, "flag -n: want an integer from 1 to 10000000"},
		{[]string{"-n", "1e3"}, "flag -n: want an integer"},
		{[]string{"-batch", "-1"}, "flag -batch: want an integer from 1"},
		{[]string{"-sources", "127.0.0.8-127.0.0.1"}, "flag -sources: \"127.0.0.8-127.0.0.1\" is not a range: want FIRST-LAST of one family, FIRST <= LAST"},
		{[]string{"-sources", "127.0.0.1-::1"}, "flag -sources: \"127.0.0.1-::1\" is not a range"},
		{[]string{"-sources", "localhost"}, "flag -sources: \"localhost\" is not an address: want 127.0.0.1-127.0.0.8 or 127.0.0.1,127.0.0.2"},
		{[]string{"-sources", ""}, "flag -sources: \"\" is not an address"},
		{[]string{"-sources", "10.0.0.0-10.0.255.255"}, "flag -sources: more than 4096 addresses"},
		{[]string{"-hold", "-1s"}, "flag -hold: want a duration of 0 or more"},
		{[]string{"-timeout", "0"}, "flag -timeout: want a positive duration"},
		{[]string{"-admin", "ftp://x:1"}, "flag -admin: want http://HOST:PORT"},
		{[]string{"-pid", "x"}, "flag -pid: want a process id"},
		{[]string{"-free-os-memory", "-admin", ""}, "flag -free-os-memory: needs the target's admin listener (-admin)"},
		{[]string{"-url", "ws://127.0.0.1:8080/socket.io/", "-sources", "127.0.0.1-127.0.0.2"}, "flag -sources: a Socket.IO URL (/socket.io/) is dialled by the zishang520 client, which binds no source address"},
		{[]string{"-url", "ws://127.0.0.1:8080/socket.io/?EIO=3&transport=websocket"}, "EIO=3: the Socket.IO client speaks Engine.IO 4 (EIO=4) only"},
		{[]string{"-url", "ws://127.0.0.1:8080/socket.io/?transport=webtransport"}, "transport=webtransport: want websocket or polling"},
		{[]string{"-namespace", "/custom"}, "flag -namespace: only for a Socket.IO URL (ws://HOST:PORT/socket.io/)"},
		{[]string{"-url", "ws://127.0.0.1:8080/socket.io", "-namespace", "custom"}, "flag -namespace: want a path starting with /"},
		{[]string{"-json"}, "flag needs an argument: -json"},
		{[]string{"extra"}, `unexpected argument "extra"`},
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
	var b strings.Builder
	Usage(&b)
	for _, name := range []string{"-url", "-n", "-batch", "-sources", "-hold", "-timeout", "-admin", "-pid", "-json"} {
		if !strings.Contains(b.String(), "  "+name+" ") && !strings.Contains(b.String(), "  "+name+"\n") {
			t.Errorf("usage does not list %s:\n%s", name, b.String())
		}
	}
}

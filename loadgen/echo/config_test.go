package echo

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
)

func defaults() Config {
	return Config{
		Common: scenario.Common{URL: DefaultURL, Admin: "http://127.0.0.1:9100"},
		Conns:  DefaultConns, Size: DefaultSize, Mode: DefaultMode, Inflight: DefaultInflight,
		Rate: DefaultRate, Duration: DefaultDuration, Warmup: DefaultWarmup, Timeout: DefaultTimeout,
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func(*Config)
	}{
		{nil, func(*Config) {}},
		{[]string{"-url", "ws://10.0.0.7:3000/echo?x=1", "-c", "1", "-size", "1", "-mode", "pipelined", "-inflight", "4", "-duration", "1s", "-warmup", "0", "-timeout", "2s", "-json", "-"},
			func(c *Config) {
				c.URL, c.Conns, c.Size, c.Mode, c.Inflight, c.Duration, c.Warmup, c.Timeout, c.JSON = "ws://10.0.0.7:3000/echo?x=1", 1, 1, Pipelined, 4, time.Second, 0, 2*time.Second, "-"
				c.Admin = "http://10.0.0.7:9100" // the target's host
			}},
		{[]string{"-url", "ws://127.0.0.1:8080"}, func(c *Config) { c.URL = "ws://127.0.0.1:8080/" }},
		{[]string{"-url", "tcp://127.0.0.1:7000/", "-mode", "rate", "-rate", "10"}, func(c *Config) { c.URL, c.Mode, c.Rate = "tcp://127.0.0.1:7000", Rate, 10 }},
		{[]string{"-admin", "", "-pid", "123"}, func(c *Config) { c.Admin, c.PID = "", 123 }},
		{[]string{"-admin", "127.0.0.1:9200"}, func(c *Config) { c.Admin = "http://127.0.0.1:9200" }},
	} {
		got, err := ParseFlags(tc.args)
		if err != nil {
			t.Errorf("ParseFlags(%q): %v", tc.args, err)
			continue
		}
		want := defaults()
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
		{[]string{"-url", "127.0.0.1:8080"}, "flag -url: want ws://HOST:PORT/PATH, wss://HOST:PORT/PATH, tcp://HOST:PORT or tls://HOST:PORT"},
		{[]string{"-url", "http://127.0.0.1:8080/"}, "flag -url: want ws://"},
		{[]string{"-url", "ws://127.0.0.1:8080/socket.io"}, "is a Socket.IO target's Engine.IO path, where echo's WebSocket messages are not Socket.IO events: use loadgen handshake -url http://127.0.0.1:8080"},
		{[]string{"-url", "https://127.0.0.1:8080/"}, "flag -url: want ws://HOST:PORT/PATH, wss://"},
		{[]string{"-url", "tls://127.0.0.1:7000/echo"}, "flag -url: a tls:// URL has no path"},
		{[]string{"-ca", "/nonexistent/cert.pem"}, "flag -ca: open /nonexistent/cert.pem"},
		{[]string{"-url", "ws://127.0.0.1/"}, "flag -url: want ws://HOST:PORT"},
		{[]string{"-url", "tcp://127.0.0.1:7000/echo"}, "flag -url: a tcp:// URL has no path"},
		{[]string{"-c", "0"}, "flag -c: want an integer from 1 to"},
		{[]string{"-c", "many"}, "flag -c: want an integer"},
		{[]string{"-size", "0"}, "flag -size: want an integer from 1 to 16777216"},
		{[]string{"-size", "16777217"}, "flag -size: want an integer from 1"},
		{[]string{"-mode", "async"}, "flag -mode: want sync, pipelined, rate"},
		{[]string{"-inflight", "0"}, "flag -inflight: want an integer from 1"},
		{[]string{"-rate", "-5"}, "flag -rate: want an integer from 1"},
		{[]string{"-duration", "0"}, "flag -duration: want a positive duration"},
		{[]string{"-duration", "10"}, "flag -duration: want a positive duration"},
		{[]string{"-warmup", "-1s"}, "flag -warmup: want a duration of 0 or more"},
		{[]string{"-timeout", "0s"}, "flag -timeout: want a positive duration"},
		{[]string{"-admin", "http://127.0.0.1:9100/stats"}, "flag -admin: want http://HOST:PORT"},
		{[]string{"-pid", "0"}, "flag -pid: want a process id"},
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"100"}, `unexpected argument "100"`},
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
	for _, name := range []string{"-url", "-c", "-size", "-mode", "-inflight", "-rate", "-duration", "-warmup", "-timeout", "-admin", "-pid", "-json"} {
		if !strings.Contains(b.String(), "  "+name+" ") && !strings.Contains(b.String(), "  "+name+"\n") {
			t.Errorf("usage does not list %s:\n%s", name, b.String())
		}
	}
}

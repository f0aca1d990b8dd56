package echo

import (
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/scenario/scenariotest"
)

func defaults() Config {
	return Config{
		Common: scenario.Common{URL: DefaultURL, Admin: "http://127.0.0.1:9100"},
		Conns:  DefaultConns, Size: DefaultSize, Mode: DefaultMode, Inflight: DefaultInflight,
		Rate: DefaultRate, Duration: DefaultDuration, Warmup: DefaultWarmup, Timeout: DefaultTimeout,
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	scenariotest.ParsesFlags(t, ParseFlags, defaults(), []scenariotest.GoodFlag[Config]{
		{Args: nil, Want: func(*Config) {}},
		{Args: []string{"-url", "ws://10.0.0.7:3000/echo?x=1", "-c", "1", "-size", "1", "-mode", "pipelined", "-inflight", "4", "-duration", "1s", "-warmup", "0", "-timeout", "2s", "-json", "-"}, Want: func(c *Config) {
			c.URL, c.Conns, c.Size, c.Mode, c.Inflight, c.Duration, c.Warmup, c.Timeout, c.JSON = "ws://10.0.0.7:3000/echo?x=1", 1, 1, Pipelined, 4, time.Second, 0, 2*time.Second, "-"
			c.Admin = "http://10.0.0.7:9100" // the target's host
		}},
		{Args: []string{"-url", "ws://127.0.0.1:8080"}, Want: func(c *Config) { c.URL = "ws://127.0.0.1:8080/" }},
		{Args: []string{"-url", "tcp://127.0.0.1:7000/", "-mode", "rate", "-rate", "10"}, Want: func(c *Config) { c.URL, c.Mode, c.Rate = "tcp://127.0.0.1:7000", Rate, 10 }},
		{Args: []string{"-text", "-url", "wss://127.0.0.1:8443/"}, Want: func(c *Config) { c.Text, c.URL = true, "wss://127.0.0.1:8443/" }},
		{Args: []string{"-admin", "", "-pid", "123"}, Want: func(c *Config) { c.Admin, c.PID = "", 123 }},
		{Args: []string{"-admin", "127.0.0.1:9200"}, Want: func(c *Config) { c.Admin = "http://127.0.0.1:9200" }},
	})
}

func TestParseFlagsErrors(t *testing.T) {
	t.Parallel()
	scenariotest.RefusesFlags(t, ParseFlags, []scenariotest.BadFlag{
		{Args: []string{"-url", "127.0.0.1:8080"}, Want: "flag -url: want ws://HOST:PORT/PATH, wss://HOST:PORT/PATH, tcp://HOST:PORT or tls://HOST:PORT"},
		{Args: []string{"-url", "http://127.0.0.1:8080/"}, Want: "flag -url: want ws://"},
		{Args: []string{"-url", "ws://127.0.0.1:8080/socket.io"}, Want: "is a Socket.IO target's Engine.IO path, where echo's WebSocket messages are not Socket.IO events: use loadgen handshake -url http://127.0.0.1:8080"},
		{Args: []string{"-url", "https://127.0.0.1:8080/"}, Want: "flag -url: want ws://HOST:PORT/PATH, wss://"},
		{Args: []string{"-url", "tls://127.0.0.1:7000/echo"}, Want: "flag -url: a tls:// URL has no path"},
		{Args: []string{"-ca", "/nonexistent/cert.pem"}, Want: "flag -ca: open /nonexistent/cert.pem"},
		{Args: []string{"-url", "ws://127.0.0.1/"}, Want: "flag -url: want ws://HOST:PORT"},
		{Args: []string{"-url", "tcp://127.0.0.1:7000/echo"}, Want: "flag -url: a tcp:// URL has no path"},
		{Args: []string{"-text", "-url", "tcp://127.0.0.1:7000"}, Want: "flag -text: want a ws:// or wss:// -url, not tcp://127.0.0.1:7000: raw TCP has no frames"},
		{Args: []string{"-url", "tls://127.0.0.1:7000", "-text"}, Want: "flag -text: want a ws:// or wss:// -url, not tls://"},
		{Args: []string{"-c", "0"}, Want: "flag -c: want an integer from 1 to"},
		{Args: []string{"-c", "many"}, Want: "flag -c: want an integer"},
		{Args: []string{"-size", "0"}, Want: "flag -size: want an integer from 1 to 16777216"},
		{Args: []string{"-size", "16777217"}, Want: "flag -size: want an integer from 1"},
		{Args: []string{"-mode", "async"}, Want: "flag -mode: want sync, pipelined, rate"},
		{Args: []string{"-inflight", "0"}, Want: "flag -inflight: want an integer from 1"},
		{Args: []string{"-rate", "-5"}, Want: "flag -rate: want an integer from 1"},
		{Args: []string{"-duration", "0"}, Want: "flag -duration: want a positive duration"},
		{Args: []string{"-duration", "10"}, Want: "flag -duration: want a positive duration"},
		{Args: []string{"-warmup", "-1s"}, Want: "flag -warmup: want a duration of 0 or more"},
		{Args: []string{"-timeout", "0s"}, Want: "flag -timeout: want a positive duration"},
		{Args: []string{"-admin", "http://127.0.0.1:9100/stats"}, Want: "flag -admin: want http://HOST:PORT"},
		{Args: []string{"-pid", "0"}, Want: "flag -pid: want a process id"},
		{Args: []string{"-bogus"}, Want: "-bogus"},
		{Args: []string{"100"}, Want: `unexpected argument "100"`},
	})
}

func TestUsage(t *testing.T) {
	t.Parallel()
	scenariotest.ListsFlags(t, Usage, "-url", "-c", "-size", "-mode", "-inflight", "-rate", "-duration", "-warmup", "-timeout", "-admin", "-pid", "-json", "-text")
}

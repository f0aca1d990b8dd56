package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/config"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestDefaults(t *testing.T) {
	c, err := config.Parse(nil, env(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.AdminAddr != ":9100" || c.SocketIO.Delay != 50*time.Millisecond || c.ShutdownTimeout != 5*time.Second || !c.Metrics || c.Pprof {
		t.Errorf("defaults: %+v", c)
	}
	// No stricter than Node's http server (keepAliveTimeout 5 s,
	// requestTimeout 300 s).
	if c.IdleTimeout != 5*time.Second || c.BodyTimeout != 300*time.Second {
		t.Errorf("idle timeout %v, body timeout %v; want 5s and 300s", c.IdleTimeout, c.BodyTimeout)
	}
	if strings.Join(c.SocketIO.Transports, ",") != "polling,websocket" {
		t.Errorf("transports default %v", c.SocketIO.Transports)
	}
}

// TestPrecedence: a flag beats the environment, the environment beats the
// default.
func TestPrecedence(t *testing.T) {
	vars := map[string]string{"KG_DELAY": "70ms", "KG_ADMIN_ADDR": "127.0.0.1:9999", "KG_EMIT_AUTH": "true", "KG_TRANSPORTS": "websocket"}
	c, err := config.Parse([]string{"-delay", "90ms"}, env(vars), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.SocketIO.Delay != 90*time.Millisecond {
		t.Errorf("flag should beat env: delay %v", c.SocketIO.Delay)
	}
	if c.AdminAddr != "127.0.0.1:9999" || !c.SocketIO.EmitAuth || strings.Join(c.SocketIO.Transports, ",") != "websocket" {
		t.Errorf("env should beat default: %+v", c)
	}
	if c.PingInterval != 25*time.Second {
		t.Errorf("default kept: ping interval %v", c.PingInterval)
	}
}

func TestBadValues(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string // a part of the one-line error
	}{
		{[]string{"-delay", "abc"}, nil, `-delay: want a duration`},
		{[]string{"-max-conns", "lots"}, nil, `-max-conns: want a whole number`},
		{[]string{"-max-conns", "-1"}, nil, `-max-conns: -1; want 0 (no cap) or more`},
		{[]string{"-max-message", "1TB"}, nil, `-max-message: want a number of bytes`},
		{[]string{"-fault-reject", "1.5"}, nil, `-fault-reject: want a fraction from 0 to 1`},
		{[]string{"-compression=maybe"}, nil, `-compression`},
		{[]string{"-log-format", "xml"}, nil, `-log-format: "xml"; want text or json`},
		{[]string{"-log-level", "loud"}, nil, `-log-level`},
		{[]string{"-transports", "carrier-pigeon"}, nil, `-transports: "carrier-pigeon"`},
		{[]string{"-slow", "wait"}, nil, `-slow: "wait"; want drop or close`},
		{[]string{"-tls-cert", "a.pem"}, nil, `-tls-cert and -tls-key go together`},
		{[]string{"-shutdown-timeout", "0s"}, nil, `-shutdown-timeout`},
		{[]string{"-redis", "127.0.0.1:6379"}, nil, `-redis: "127.0.0.1:6379"; want redis://HOST:PORT/DB`},
		{nil, map[string]string{"KG_REDIS": "redis://h:1/db"}, `-redis: "redis://h:1/db"`},
		{[]string{"-nope"}, nil, `flag provided but not defined: -nope`},
		{[]string{"stray"}, nil, `unexpected argument "stray"`},
		{nil, map[string]string{"KG_PING_TIMEOUT": "soon"}, `KG_PING_TIMEOUT (flag -ping-timeout): want a duration`},
		{nil, map[string]string{"KG_MAX_PAYLOAD": "0"}, `-max-payload: 0; want a positive number`},
		{[]string{"-idle-timeout", "0s"}, nil, `-idle-timeout: 0s; want a positive duration`},
		{[]string{"-idle-timeout", "forever"}, nil, `-idle-timeout: want a duration`},
		{[]string{"-body-timeout", "-1s"}, nil, `-body-timeout: -1s; want a positive duration`},
		{nil, map[string]string{"KG_BODY_TIMEOUT": "slow"}, `KG_BODY_TIMEOUT (flag -body-timeout): want a duration`},
		{[]string{"-max-header-bytes", "512"}, nil, `-max-header-bytes: 512; want 1024 (1KiB) to 1048576 (1MiB) bytes`},
		{nil, map[string]string{"KG_MAX_HEADER_BYTES": "2MiB"}, `-max-header-bytes: 2097152; want 1024 (1KiB)`},
	}
	for _, c := range cases {
		_, err := config.Parse(c.args, env(c.env), nil)
		var usage *config.UsageError
		if !errors.As(err, &usage) {
			t.Errorf("%v %v: error %v, want a UsageError", c.args, c.env, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v %v: error %q, want one line containing %q", c.args, c.env, err, c.want)
		}
	}
}

func TestSizes(t *testing.T) {
	c, err := config.Parse([]string{"-max-message", "16MiB", "-max-payload", "1000"}, env(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxMessage != 16<<20 || c.SocketIO.MaxPayload != 1000 {
		t.Errorf("sizes: %d %d", c.MaxMessage, c.SocketIO.MaxPayload)
	}
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	_, err := config.Parse([]string{"-h"}, env(nil), &out)
	if !errors.Is(err, config.ErrHelp) {
		t.Fatalf("err %v, want ErrHelp", err)
	}
	if !strings.Contains(out.String(), "KG_ADMIN_ADDR") {
		t.Errorf("usage does not name the environment twins:\n%s", out.String())
	}
}

func TestEffective(t *testing.T) {
	c, err := config.Parse([]string{"-delay", "100ms", "-origin", "a,b"}, env(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := c.Effective()
	if e["delay"] != "100ms" || e["origin"] != "a,b" || e["addr"] != ":8080" {
		t.Errorf("effective: %v", e)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("-delay", "50ms", "KG_MAX_CONNS", "10")
	f.Add("-max-message", "1MiB", "KG_FAULT_DROP", "0.5")
	f.Add("-origin", ",,", "KG_TRANSPORTS", "polling,,websocket")
	f.Fuzz(func(t *testing.T, flag, value, envName, envValue string) {
		_, err := config.Parse([]string{flag, value}, env(map[string]string{envName: envValue}), nil)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	})
}

// TestGiven: Given names the flags set on the command line or through
// their environment twin, once each, and not the defaults.
func TestGiven(t *testing.T) {
	vars := map[string]string{"KG_DELAY": "70ms", "KG_LOOPS": "2", "KG_ADMIN_ADDR": ""}
	c, err := config.Parse([]string{"-delay", "90ms", "-variant", "echo-gnet"}, env(vars), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Given, " "); got != "delay loops variant" {
		t.Errorf("given %q, want %q", got, "delay loops variant")
	}
	c, err = config.Parse(nil, env(nil), nil)
	if err != nil || len(c.Given) != 0 {
		t.Errorf("nothing given: %v, err %v", c.Given, err)
	}
}

// TestVersionHasNoEnvTwin: KG_VERSION (an image tag, say) neither prints
// the version nor fails start-up.
func TestVersionHasNoEnvTwin(t *testing.T) {
	c, err := config.Parse(nil, env(map[string]string{"KG_VERSION": "1.2"}), nil)
	if err != nil || c.Version {
		t.Errorf("KG_VERSION=1.2: version %v, err %v; want neither", c.Version, err)
	}
}

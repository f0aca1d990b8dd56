package config_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/shared/config"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// every sets each flag to a value other than its default, so that a flag
// wired to the wrong field shows in Effective.
var every = []string{
	"-variant", "echo-gnet", "-addr", ":1", "-admin-addr", ":2", "-log-format", "json", "-log-level", "debug",
	"-backlog", "3", "-max-conns", "4", "-shutdown-timeout", "23s", "-max-message", "6KiB", "-compression",
	"-origin", "a,b", "-tls-cert", "c.pem", "-tls-key", "k.pem", "-handshake-timeout", "7s", "-idle-timeout", "8s",
	"-body-timeout", "9s", "-metrics=false", "-pprof", "-fault-reject", "0.1", "-fault-delay", "11ms",
	"-fault-close-after", "12", "-fault-drop", "0.13", "-fault-drop-chunked-post", "-delay", "14ms", "-blocking-model", "node", "-transports", "websocket",
	"-ping-interval", "15s", "-ping-timeout", "16s", "-max-payload", "17", "-connect-timeout", "18s", "-emit-auth", "-allow-eio3", "-admin-ui", "-engine", "native-gnet",
	"-push-interval", "19ms", "-push-size", "20", "-send-queue", "21", "-slow", "close", "-loops", "22", "-redis", "redis://127.0.0.1:24/1",
	"-dashboard-replicas", "http://127.0.0.1:25,http://127.0.0.1:26/", "-subprotocols", "mqtt,v1.ocpp", "-subprotocol-required",
}

// invalid breaks each check of Validate once.
var invalid = [][]string{
	{"-addr", ""}, {"-addr", ":99999"}, {"-addr", "8080"}, {"-addr", "127.0.0.1:http"}, {"-addr", "127.0.0.1:"},
	{"-addr", "bad host:80"}, {"-addr", "256.0.0.1:80"}, {"-addr", "[::1:80"}, {"-admin-addr", ":65536"}, {"-admin-addr", "localhost"}, {"-log-format", "xml"}, {"-log-level", "loud"}, {"-backlog", "-1"}, {"-max-conns", "-1"},
	{"-shutdown-timeout", "0s"}, {"-max-message", "0"}, {"-tls-cert", "a.pem"}, {"-tls-key", "a.pem"},
	{"-handshake-timeout", "0s"}, {"-idle-timeout", "0s"}, {"-body-timeout", "0s"}, {"-fault-delay", "-1s"},
	{"-fault-close-after", "-1"}, {"-delay", "-1s"}, {"-blocking-model", "uvloop"}, {"-transports", ""}, {"-transports", "pigeon"},
	{"-ping-interval", "0s"}, {"-ping-timeout", "0s"}, {"-max-payload", "0"}, {"-connect-timeout", "0s"}, {"-engine", "node"}, {"-native-lib", "epoll"},
	{"-subprotocols", "a b"}, {"-subprotocol-required"}, {"-admin-token", "a b"}, {"-tls-client-ca", "ca.pem"}, {"-ack-delay", "-1s"}, {"-path", "socket.io"}, {"-path", "/"}, {"-push-event", "connect"}, {"-push-rooms", "10001"}, {"-namespaces", "chat"}, {"-recovery", "-1s"}, {"-recovery", "2h"}, {"-recovery", "1m", "-redis", "redis://127.0.0.1:6379/0"},
	{"-push-interval", "-1s"}, {"-push-size", "-1"}, {"-send-queue", "0"}, {"-slow", "wait"}, {"-loops", "-1"}, {"-redis", "localhost:6379"},
	{"-dashboard-replicas", "127.0.0.1:9100"}, {"-dashboard-replicas", "http://a:1/stats"}, {"-dashboard-replicas", "http://a:99999"},
	{"-dashboard-replicas", strings.Repeat("http://a:1,", config.MaxDashboardReplicas+1)},
}

// TestGolden pins what users see of the configuration: the -h text (flag
// names, help, defaults, environment names), the effective settings as
// /health and the start log line show them, and Validate's errors.
func TestGolden(t *testing.T) {
	var b strings.Builder
	config.Usage(&b)
	golden(t, "usage.golden", b.String())

	b.Reset()
	for _, args := range [][]string{nil, every} {
		c, err := config.Parse(args, env(nil), nil)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		out, err := json.Marshal(c.Effective())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\n", out)
	}
	golden(t, "effective.golden", b.String())

	b.Reset()
	for _, args := range invalid {
		_, err := config.Parse(args, env(nil), nil)
		fmt.Fprintf(&b, "%q: %v\n", args, err)
	}
	golden(t, "validate.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s changed (go test -run TestGolden -update rewrites it if on purpose):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

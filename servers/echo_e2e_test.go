package servers

// End-to-end tests of the echo variants: the knowngood binary driven by
// Node's ws and Python's websockets (scripts/clients/ws-echo.mjs and
// ws_echo.py), /stats and /metrics checked against what the clients did,
// and SIGTERM.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/protocol"
)

var wsEchoVariants = variants.NamesOf(variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket)))

func haveNodeWSEcho() bool {
	_, err := os.Stat("../scripts/node_modules/ws/package.json")
	return err == nil
}

func havePythonWSEcho() bool {
	return exec.Command("/usr/bin/python3", "-c", "import websockets").Run() == nil
}

// wsClientResult is the one JSON line of scripts/clients/ws-echo.mjs and
// scripts/clients/ws_echo.py.
type wsClientResult struct {
	Client      string            `json:"client"`
	Version     string            `json:"version"`
	Cases       map[string]string `json:"cases"`
	Connections uint64            `json:"connections"`
	Messages    uint64            `json:"messages"`
	Bytes       uint64            `json:"bytes"`
}

func runWSClient(t *testing.T, client string, args ...string) wsClientResult {
	t.Helper()
	var r wsClientResult
	switch client {
	case "ws":
		runScript(t, &r, "node", "../scripts/clients/ws-echo.mjs", args...)
	case "websockets":
		runScript(t, &r, "/usr/bin/python3", "../scripts/clients/ws_echo.py", args...)
	}
	return r
}

// runScript runs a client script, bounded to a minute, and decodes the one
// JSON line it prints into result.
func runScript(t *testing.T, result any, interpreter, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, append([]string{script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), result); err != nil {
		t.Fatalf("%s printed %q: %v", script, out, err)
	}
}

func echoURL(s *server) string { return "ws" + strings.TrimPrefix(s.url, "http") + "/echo" }

// TestEchoExternalClients: Node's ws and Python's websockets against every
// WebSocket echo variant, with and without -compression: text, binary,
// empty, fragmented and 1 MiB messages, ping, the close code, and the bad
// cases (over -max-message: 1009; invalid UTF-8 from ws: 1007). The
// server's /stats counts exactly what each client did.
func TestEchoExternalClients(t *testing.T) {
	t.Parallel()
	var clients []string
	if haveNodeWSEcho() {
		clients = append(clients, "ws")
	}
	if havePythonWSEcho() {
		clients = append(clients, "websockets")
	}
	need(t, "ws (scripts/node_modules) and python3-websockets", len(clients) == 2)
	for _, variant := range wsEchoVariants {
		for _, compression := range []bool{false, true} {
			name := variant
			args := []string{"-variant", variant, "-max-message", "1MiB"}
			clientArgs := []string{"--max-message", "1048576", "--bad"}
			if compression {
				name += "/compression"
				args = append(args, "-compression")
				clientArgs = append(clientArgs, "--compression")
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := startServer(t, args...)
				for _, client := range clients {
					before := s.stats(t)
					r := runWSClient(t, client, append([]string{"--url", echoURL(s)}, clientArgs...)...)
					for c, result := range r.Cases {
						if result != "ok" {
							t.Errorf("%s %s: %s", client, c, result)
						}
					}
					echoSettle(t, s, func(st protocol.Stats) bool { return st.ConnectionsActive == 0 })
					d := protocol.Diff(before, s.stats(t))
					t.Logf("%s %s: %d cases; server: %d messages, %d bytes, disconnects %v", r.Client, r.Version, len(r.Cases), d.MessagesReceived, d.BytesReceived, d.Disconnects)
					wantDisconnects := map[string]uint64{"1000": 1, "1009": 1}
					if client == "ws" {
						wantDisconnects["1007"] = 1
					}
					checks := []struct {
						what      string
						got, want uint64
					}{
						{"handshakes ok", d.Handshakes[protocol.ResultOK], r.Connections},
						{"connections_total", d.ConnectionsTotal, r.Connections},
						{"messages_received", d.MessagesReceived, r.Messages},
						{"messages_sent", d.MessagesSent, r.Messages},
						{"bytes_received", d.BytesReceived, r.Bytes},
						{"bytes_sent", d.BytesSent, r.Bytes},
					}
					for reason, n := range wantDisconnects {
						checks = append(checks, struct {
							what      string
							got, want uint64
						}{"disconnects " + reason, d.Disconnects[reason], n})
					}
					for _, c := range checks {
						if c.got != c.want {
							t.Errorf("%s: server %s %d, want %d", client, c.what, c.got, c.want)
						}
					}
					if len(d.Disconnects) != len(wantDisconnects) {
						t.Errorf("%s: disconnects %v, want %v", client, d.Disconnects, wantDisconnects)
					}
				}
				metrics := echoGet(t, s.admin+"/metrics")
				for _, want := range []string{`knowngood_disconnects_total{reason="1009",variant="` + variant + `"}`, `knowngood_handshakes_total{result="ok",transport="websocket",variant="` + variant + `"}`} {
					if !strings.Contains(metrics, want) {
						t.Errorf("/metrics lacks %s", want)
					}
				}
			})
		}
	}
}

// TestEchoSIGTERM: on SIGTERM every variant closes its clients (1001 for
// the WebSocket ones, EOF for echo-tcp) and exits with status 0 within
// -shutdown-timeout.
func TestEchoSIGTERM(t *testing.T) {
	t.Parallel()
	for _, variant := range variants.NamesOf(variants.ByFamily(variants.Echo)) {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "-variant", variant, "-shutdown-timeout", "3s")
			gone := make(chan error, 1)
			if isRawTCP(variant) {
				c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				go func() { _, err := c.Read(make([]byte, 1)); gone <- err }()
			} else {
				conn, _, err := websocket.DefaultDialer.Dial(echoURL(s), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				go func() { _, _, err := conn.ReadMessage(); gone <- err }()
			}
			echoSettle(t, s, func(st protocol.Stats) bool { return st.ConnectionsActive == 1 })

			began := time.Now()
			_ = s.Signal(syscall.SIGTERM)
			err := <-gone
			var ce *websocket.CloseError
			switch {
			case isRawTCP(variant):
				if !errors.Is(err, io.EOF) {
					t.Errorf("after SIGTERM the client got %v, want EOF", err)
				}
			case !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway:
				t.Errorf("after SIGTERM the client got %v, want close 1001", err)
			}
			s.exitsWithin(t, began, 3*time.Second)
		})
	}
}

// TestEchoMetricsOff: -metrics=false serves the same echo, and /stats says
// that metrics are off.
func TestEchoMetricsOff(t *testing.T) {
	t.Parallel()
	for _, variant := range wsEchoVariants {
		s := startServer(t, "-variant", variant, "-metrics=false")
		conn, _, err := websocket.DefaultDialer.Dial(echoURL(s), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := conn.WriteMessage(websocket.BinaryMessage, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if op, p, err := conn.ReadMessage(); err != nil || op != websocket.BinaryMessage || string(p) != "x" {
			t.Errorf("%s: echo %d %q %v", variant, op, p, err)
		}
		conn.Close()
		resp, err := http.Get(s.admin + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: /stats answered %d with -metrics=false, want 404", variant, resp.StatusCode)
		}
	}
}

func echoSettle(t *testing.T, s *server, cond func(protocol.Stats) bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(s.stats(t)); {
		if time.Now().After(end) {
			t.Fatalf("stats did not settle: %+v", s.stats(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func echoGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

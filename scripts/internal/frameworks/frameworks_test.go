package frameworks

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/loadgen/siolite"
	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/leaktest"
)

func TestMain(m *testing.M) { leaktest.Main(m, harness.RemoveBuilds) }

func TestLookup(t *testing.T) {
	keys := Keys()
	want := []string{"node-ws", "node-socketio", "websockets", "websockets-uvloop", "fastapi", "fastapi-uvloop", "gorilla", "coder", "netty", "tomcat"}
	if !slices.Equal(keys, want) {
		t.Errorf("Keys() = %v, want %v", keys, want)
	}
	for _, s := range Servers() {
		if got, ok := Lookup(s.Key); !ok || got.Row != s.Row || got.Runs == "" {
			t.Errorf("Lookup(%q) = %+v, %v", s.Key, got, ok)
		}
	}
	if _, ok := Lookup("spring"); ok {
		t.Error(`Lookup("spring"): found`)
	}
}

// TestAvailableSaysWhat: away from the repository root, where Node's
// packages are not, a Node server is not available, and the reason names
// make deps.
func TestAvailableSaysWhat(t *testing.T) {
	s, _ := Lookup("node-ws")
	if err := s.Available(); err == nil || !strings.Contains(err.Error(), "make deps") {
		t.Errorf("node-ws outside the repository root: Available() = %v, want an error naming make deps", err)
	}
}

// TestEcho starts every server from the repository root, as the
// experiment does, and checks its echo with a real client: a 128-byte
// text message and a binary one back as they went (gorilla's client), or
// for Socket.IO the echo event answered (siolite). A server that cannot
// run here fails the test, naming make deps; under -short it is skipped.
func TestEcho(t *testing.T) {
	t.Chdir("../../..")
	for _, s := range Servers() {
		t.Run(s.Key, func(t *testing.T) {
			if err := s.Available(); err != nil {
				if testing.Short() {
					t.Skip(err)
				}
				t.Fatal(err) // it names what make deps installs
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			started := time.Now()
			p, url, err := s.Start(ctx, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := p.Stop(); err != nil {
					t.Error(err)
				}
			})
			t.Logf("%s listening after %v: %s", s.Key, time.Since(started).Round(time.Millisecond), firstLine(p.Log()))
			if s.SocketIO {
				if !strings.HasPrefix(url, "http://") {
					t.Fatalf("url %q, want http://", url)
				}
				socketIOEcho(ctx, t, url)
				return
			}
			if url != "ws://"+p.Addr+"/" {
				t.Fatalf("url %q, want ws://%s/", url, p.Addr)
			}
			webSocketEcho(ctx, t, url)
		})
	}
}

func webSocketEcho(ctx context.Context, t *testing.T, url string) {
	c, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetReadDeadline(deadline)
	_ = c.SetWriteDeadline(deadline)
	text := bytes.Repeat([]byte("0123456789abcdef"), 8) // the report's 128 bytes
	binary := make([]byte, 128)
	for i := range binary {
		binary[i] = byte(255 - i) // not valid UTF-8: a server that made it text would fail
	}
	for _, m := range []struct {
		op   int
		data []byte
	}{{websocket.TextMessage, text}, {websocket.BinaryMessage, binary}} {
		if err := c.WriteMessage(m.op, m.data); err != nil {
			t.Fatal(err)
		}
		op, got, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if op != m.op || !bytes.Equal(got, m.data) {
			t.Errorf("sent opcode %d %q, got opcode %d %q", m.op, m.data, op, got)
		}
	}
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), deadline)
}

func socketIOEcho(ctx context.Context, t *testing.T, url string) {
	replies := make(chan []json.RawMessage, 1)
	c, err := siolite.Dial(ctx, siolite.Options{URL: url, OnEvent: func(name string, args []json.RawMessage) {
		if name == EchoReply {
			select {
			case replies <- args:
			default:
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	text := strings.Repeat("0123456789abcdef", 8)
	if err := c.Emit(EchoEvent, text); err != nil {
		t.Fatal(err)
	}
	select {
	case args := <-replies:
		var got string
		if len(args) != 1 || json.Unmarshal(args[0], &got) != nil || got != text {
			t.Errorf("%s answered %s with %q, want [%q]", EchoEvent, EchoReply, args, text)
		}
	case <-ctx.Done():
		t.Fatalf("no %s to %s: %v", EchoReply, EchoEvent, ctx.Err())
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

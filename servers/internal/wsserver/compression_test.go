package wsserver_test

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coder "github.com/coder/websocket"
	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/wstest"
)

// The answers to a permessage-deflate offer: every target compresses with
// no context takeover either way, and with a 32 KiB window.
const (
	deflateBase = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
	deflateW15  = deflateBase + "; server_max_window_bits=15"
)

// deflateOffers are Sec-WebSocket-Extensions header lines and the answer
// every target gives ("" = no extension, the upgrade goes on without). The
// first are the offers of Autobahn TestSuite's cases 12 and 13 (autobahn's
// PerMessageDeflateOffer); 13.3 and 13.5 ask for a window the server's
// compressor cannot keep to. A malformed offer is declined (RFC 7692 5.1),
// and the next one in the list tried.
var deflateOffers = []struct {
	name  string
	lines []string
	want  string
}{
	{"autobahn 12.x and 13.1", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits"}, deflateBase},
	{"autobahn 13.2", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover"}, deflateBase},
	{"autobahn 13.3", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_max_window_bits=8"}, ""},
	{"autobahn 13.4", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_max_window_bits=15"}, deflateW15},
	{"autobahn 13.5", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover; server_max_window_bits=9"}, ""},
	{"autobahn 13.6", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover; server_max_window_bits=15"}, deflateW15},
	{"autobahn 13.7", []string{"permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover; server_max_window_bits=8, permessage-deflate; client_no_context_takeover; client_max_window_bits; server_no_context_takeover, permessage-deflate; client_no_context_takeover; client_max_window_bits"}, deflateBase},
	{"bare", []string{"permessage-deflate"}, deflateBase},
	{"client window 9", []string{"permessage-deflate; client_max_window_bits=9"}, deflateBase},
	{"server window 15 alone", []string{"permessage-deflate; server_max_window_bits=15"}, deflateW15},
	{"two header lines", []string{"x-webkit-deflate-frame", "permessage-deflate; server_max_window_bits=10, permessage-deflate; client_max_window_bits"}, deflateBase},
	{"server window 7", []string{"permessage-deflate; server_max_window_bits=7"}, ""},
	{"server window 16", []string{"permessage-deflate; server_max_window_bits=16"}, ""},
	{"server window abc", []string{"permessage-deflate; server_max_window_bits=abc"}, ""},
	{"duplicate parameter", []string{"permessage-deflate; server_max_window_bits=15; server_max_window_bits=15"}, ""},
	{"unknown parameter", []string{"permessage-deflate; mystery"}, ""},
	{"bad then good", []string{"permessage-deflate; client_max_window_bits=16, permessage-deflate; server_max_window_bits=15"}, deflateW15},
}

// TestDeflateNegotiation: a raw client sends each offer in deflateOffers
// and checks the answer byte for byte. Where compression was agreed, a
// message compressed by the client comes back compressed (RSV1) and
// inflates to what was sent; where it was not, an uncompressed message
// comes back uncompressed and a compressed one is a protocol error (1002).
func TestDeflateNegotiation(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) { c.Compression = true })
		for _, tc := range deflateOffers {
			t.Run(tc.name, func(t *testing.T) {
				rc := dialTCP(t, tg.Addr)
				var extra []string
				for _, l := range tc.lines {
					extra = append(extra, "Sec-WebSocket-Extensions: "+l+"\r\n")
				}
				rc.write([]byte(wstest.UpgradeRequest(extra...)))
				resp := rc.response()
				if resp.StatusCode != http.StatusSwitchingProtocols {
					t.Fatalf("upgrade: %s", resp.Status)
				}
				got := resp.Header.Values("Sec-WebSocket-Extensions")
				var want []string
				if tc.want != "" {
					want = []string{tc.want}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("Sec-WebSocket-Extensions %q, want %q", got, want)
				}
				msg := []byte(strings.Repeat("permessage-deflate, once for all three; ", 100))
				if tc.want == "" {
					rc.send(ws.OpText, true, msg)
					if h, p := rc.read(); h.OpCode != ws.OpText || h.Rsv != 0 || !bytes.Equal(p, msg) {
						t.Fatalf("uncompressed echo: opcode %v, rsv %b, %d bytes", h.OpCode, h.Rsv, len(p))
					}
					f := ws.NewTextFrame(deflate(t, msg))
					f.Header.Rsv = ws.Rsv(true, false, false)
					rc.sendFrame(ws.MaskFrame(f))
					rc.expectClose(1002)
					return
				}
				// Two messages: each stands alone (no context takeover).
				for i := range 2 {
					f := ws.NewTextFrame(deflate(t, msg))
					f.Header.Rsv = ws.Rsv(true, false, false)
					rc.sendFrame(ws.MaskFrame(f))
					h, p := rc.read()
					if h.OpCode != ws.OpText || !h.Fin || h.Rsv != ws.Rsv(true, false, false) {
						t.Fatalf("echo %d: opcode %v, fin %v, rsv %b; want a compressed text message", i, h.OpCode, h.Fin, h.Rsv)
					}
					if plain := inflate(t, p); !bytes.Equal(plain, msg) {
						t.Fatalf("echo %d inflates to %d bytes %.40q, want %d bytes", i, len(plain), plain, len(msg))
					}
				}
				rc.sendFrame(ws.MaskFrame(ws.NewCloseFrame(closePayload(1000, ""))))
				rc.expectClose(1000)
			})
		}
	})
}

// deflate compresses one message as RFC 7692 7.2.1 says: a raw DEFLATE
// stream, flushed, without its final 4 bytes.
func deflate(t *testing.T, p []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{0, 0, 0xff, 0xff})
}

// inflate undoes deflate: the 4 bytes put back, and an empty final block
// so that the reader ends cleanly.
func inflate(t *testing.T, p []byte) []byte {
	t.Helper()
	r := flate.NewReader(io.MultiReader(bytes.NewReader(p), bytes.NewReader([]byte{0, 0, 0xff, 0xff, 1, 0, 0, 0xff, 0xff})))
	defer r.Close()
	plain, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("inflating %d bytes: %v", len(p), err)
	}
	return plain
}

// nodeDeflateClient connects with Node's ws and the perMessageDeflate
// options in argv[2] (JSON), echoes one 64 KiB compressible text message,
// closes with 1000, and prints the server's Sec-WebSocket-Extensions
// answer and the result as one JSON line.
const nodeDeflateClient = `
const WebSocket = require("ws");
const [url, opts] = process.argv.slice(1);
const out = { version: require("ws/package.json").version, extensions: "", echo: "" };
const msg = "knowngood deflate ".repeat(3641).slice(0, 65536);
const ws = new WebSocket(url, { perMessageDeflate: { ...JSON.parse(opts), threshold: 0 }, handshakeTimeout: 10000 });
const timer = setTimeout(() => { out.echo = "timeout"; ws.terminate(); }, 20000);
ws.on("upgrade", (res) => { out.extensions = res.headers["sec-websocket-extensions"] || ""; });
ws.on("open", () => ws.send(msg));
ws.on("message", (data, isBinary) => {
  out.echo = !isBinary && data.toString() === msg ? "ok" : "wrong echo: " + data.length + " bytes";
  ws.close(1000);
});
ws.on("error", (err) => { out.echo = "error: " + err.message; });
ws.on("close", (code) => {
  clearTimeout(timer);
  if (out.echo === "ok" && code !== 1000) out.echo = "close " + code;
  console.log(JSON.stringify(out));
});
`

// TestDeflateNodeClient: Node's ws, a client that checks the answer to its
// offer, negotiates with every target and gets its message back.
func TestDeflateNodeClient(t *testing.T) {
	t.Parallel()
	nodeModules, err := filepath.Abs("../../../scripts/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nodeModules, "ws", "package.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ws (scripts/node_modules) is missing; .ci/run should have installed it (make deps)")
		}
		t.Skip("ws (scripts/node_modules) is missing: run make deps")
	}
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) { c.Compression = true })
		for _, tc := range []struct{ opts, want string }{
			{`{}`, deflateBase}, // offers permessage-deflate; client_max_window_bits
			{`{"serverNoContextTakeover":true,"clientNoContextTakeover":true,"serverMaxWindowBits":15,"clientMaxWindowBits":10}`, deflateW15},
			{`{"serverMaxWindowBits":10}`, ""}, // declined: the echo goes uncompressed
		} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := exec.CommandContext(ctx, "node", "-e", nodeDeflateClient, tg.URL(), tc.opts)
			cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			cancel()
			if err != nil {
				t.Fatalf("node, options %s: %v\n%s", tc.opts, err, stderr.String())
			}
			var r struct{ Version, Extensions, Echo string }
			if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
				t.Fatalf("node printed %q: %v", out, err)
			}
			if r.Extensions != tc.want || r.Echo != "ok" {
				t.Errorf("ws %s, options %s: answer %q, echo %s; want answer %q, echo ok", r.Version, tc.opts, r.Extensions, r.Echo, tc.want)
			}
		}
	})
}

// TestCompression: with -compression every target negotiates
// permessage-deflate, echoes compressed messages, and checks -max-message
// against the inflated size (a small compressed frame can inflate past it).
func TestCompression(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, name string, b build) {
		tg := start(t, name, b, func(c *config.Config) { c.Compression = true; c.MaxMessage = 64 << 10 })
		dialer := websocket.Dialer{HandshakeTimeout: 5 * time.Second, EnableCompression: true}
		conn, resp, err := dialer.Dial(tg.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.HasPrefix(ext, "permessage-deflate") {
			t.Fatalf("Sec-WebSocket-Extensions %q, want permessage-deflate", ext)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for _, m := range []struct {
			op int
			p  []byte
		}{
			{websocket.TextMessage, []byte("hi")},
			{websocket.TextMessage, nil},
			{websocket.TextMessage, bytes.Repeat([]byte("compressible "), 3000)},
			{websocket.BinaryMessage, wstest.Payload(64 << 10)},
		} {
			if err := conn.WriteMessage(m.op, m.p); err != nil {
				t.Fatal(err)
			}
			op, got, err := conn.ReadMessage()
			if err != nil || op != m.op || !bytes.Equal(got, m.p) {
				t.Fatalf("echo of %d bytes: type %d, %d bytes, %v", len(m.p), op, len(got), err)
			}
		}
		if err := conn.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("a"), 100<<10)); err != nil {
			t.Fatal(err)
		}
		_, _, err = conn.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
			t.Fatalf("100 KiB inflated over -max-message 64 KiB: %v; want close 1009", err)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, resp, err := coder.Dial(ctx, tg.URL(), &coder.DialOptions{CompressionMode: coder.CompressionContextTakeover})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.HasPrefix(ext, "permessage-deflate") {
			t.Fatalf("coder client: Sec-WebSocket-Extensions %q, want permessage-deflate", ext)
		}
		c.SetReadLimit(1 << 20)
		for _, p := range [][]byte{bytes.Repeat([]byte("again and again "), 2000), []byte("x")} {
			if err := c.Write(ctx, coder.MessageText, p); err != nil {
				t.Fatal(err)
			}
			if _, got, err := c.Read(ctx); err != nil || !bytes.Equal(got, p) {
				t.Fatalf("coder client: %d bytes back, %v", len(got), err)
			}
		}
		if err := c.Close(coder.StatusNormalClosure, ""); err != nil {
			t.Fatal(err)
		}

		// Data that does not inflate is a protocol error.
		rc := dialTCP(t, tg.Addr)
		rc.write([]byte(wstest.UpgradeRequest("Sec-WebSocket-Extensions: permessage-deflate\r\n")))
		if resp := rc.response(); resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatal(resp.Status)
		}
		f := ws.NewTextFrame([]byte{0xff, 0xff, 0xff}) // BTYPE 11 is reserved
		f.Header.Rsv = ws.Rsv(true, false, false)
		rc.sendFrame(ws.MaskFrame(f))
		rc.expectClose(1002)
	})
}

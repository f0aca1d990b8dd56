package wsserver_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
)

// TestRepliesTogether: gorilla and coder send the echoes of messages that
// came in one segment in one write, as the TCP floor and gnet do, instead
// of one write per message; a lone message is answered at once (every other
// test, sync, waits for its echo before it sends again).
func TestRepliesTogether(t *testing.T) {
	t.Parallel()
	const n = 30 // 30 x 134 bytes: one read of gorilla's and coder's 4 KiB buffers
	var batch bytes.Buffer
	for i := range n {
		f := ws.MaskFrame(ws.NewTextFrame(fmt.Appendf(nil, "%03d", i)))
		if err := ws.WriteFrame(&batch, f); err != nil {
			t.Fatal(err)
		}
	}
	for _, tgt := range libraries {
		if !tgt.netHTTP {
			continue // gnet writes from its loop, unseen by a listener wrapper
		}
		t.Run(tgt.name, func(t *testing.T) {
			t.Parallel()
			writes := lifecycletest.NewWrites()
			tg := lifecycletest.Start(t, tgt.name, tgt.build, lifecycletest.Options{Wrap: writes.Wrap})
			rc := rawDial(t, tg.Addr)
			before := writes.Count() // the 101
			rc.write(batch.Bytes())
			for i := range n {
				h, p := rc.read()
				if h.OpCode != ws.OpText || string(p) != fmt.Sprintf("%03d", i) {
					t.Fatalf("echo %d: %v %q", i, h.OpCode, p)
				}
			}
			// One write when the segment arrives whole, as it does on
			// loopback; a few if the kernel split it.
			if w := writes.Count() - before; w > 3 {
				t.Errorf("%d echoes took %d writes; want them together (1, at most 3)", n, w)
			}
		})
	}
}

// TestRepliesTogetherTLS: in TLS the target cannot ask the socket whether
// more input waits, so held replies go before every read: pipelined echoes
// all come back, in order, and a lone one is not held.
func TestRepliesTogetherTLS(t *testing.T) {
	t.Parallel()
	cert := selfSigned(t)
	wrap := func(ln net.Listener) net.Listener {
		return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	}
	for _, tgt := range libraries {
		if !tgt.netHTTP {
			continue // replies are held by the net/http libraries only
		}
		t.Run(tgt.name, func(t *testing.T) {
			t.Parallel()
			tg := lifecycletest.Start(t, tgt.name, tgt.build, lifecycletest.Options{Wrap: wrap})
			dialer := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, HandshakeTimeout: 5 * time.Second}
			conn, _, err := dialer.Dial("wss://"+tg.Addr+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			for round := range 3 {
				const n = 200
				for i := range n {
					if err := conn.WriteMessage(websocket.BinaryMessage, fmt.Appendf(nil, "%d/%d", round, i)); err != nil {
						t.Fatal(err)
					}
				}
				for i := range n {
					op, got, err := conn.ReadMessage()
					if want := fmt.Sprintf("%d/%d", round, i); err != nil || op != websocket.BinaryMessage || string(got) != want {
						t.Fatalf("echo %s: %d %q %v", want, op, got, err)
					}
				}
			}
			if err := conn.WriteMessage(websocket.TextMessage, []byte("alone")); err != nil {
				t.Fatal(err)
			}
			if _, got, err := conn.ReadMessage(); err != nil || string(got) != "alone" {
				t.Fatalf("%q, %v", got, err)
			}
		})
	}
}

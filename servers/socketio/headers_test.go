package socketio_test

import (
	"net"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// TestSlowHeaders: a client that sends its request a byte at a time and
// never finishes is dropped at -handshake-timeout and counted as a failed
// handshake (transport "unknown": the request never said).
func TestSlowHeaders(t *testing.T) { forWebSocket(t, testSlowHeaders) }

func testSlowHeaders(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.HandshakeTimeout = 500 * time.Millisecond })
	c, err := net.Dial("tcp", tg.url[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now()
	closed := make(chan struct{})
	go func() {
		_, _ = c.Read(make([]byte, 1)) // until the server closes
		close(closed)
	}()
	for _, b := range []byte("GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\n") {
		select {
		case <-closed:
		case <-time.After(100 * time.Millisecond):
			_, _ = c.Write([]byte{b})
			continue
		}
		break
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("not closed 5 s after a -handshake-timeout of 500ms")
	}
	if took := time.Since(began); took < 400*time.Millisecond {
		t.Errorf("closed after %v, before the -handshake-timeout", took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tg.metrics.Snapshot().Handshakes[protocol.ResultFailed] != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := tg.metrics.Snapshot(); st.Handshakes[protocol.ResultFailed] != 1 || st.HandshakesByTransport["unknown"][protocol.ResultFailed] != 1 {
		t.Errorf("handshakes %v by transport %v, want one failed (unknown)", st.Handshakes, st.HandshakesByTransport)
	}
}

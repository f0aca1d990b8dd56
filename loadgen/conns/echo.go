package conns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/shared/wsframe"
)

// A connect-and-request burst (a connection's first request inside its
// connect time) is what a listen queue's overflow delays: the request
// waits behind the handshake the kernel held back. -echo sends it on the
// WebSocket or TCP connection once open, -get is the request on a plain
// HTTP server.

// errEchoMismatch: the target sent back other bytes than the message.
var errEchoMismatch = errors.New("echo: the message came back different")

// echoTCP writes msg on c and reads as many bytes back, by deadline; c is
// closed when that fails.
func echoTCP(c net.Conn, msg []byte, deadline time.Time) error {
	return closeOnError(c, echoBytes(c, msg, deadline))
}

// closeOnError closes c when err is not nil, and returns err.
func closeOnError(c io.Closer, err error) error {
	if err != nil {
		_ = c.Close()
	}
	return err
}

func echoBytes(c net.Conn, msg []byte, deadline time.Time) error {
	_ = c.SetDeadline(deadline)
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write(msg); err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	back := make([]byte, len(msg))
	if _, err := io.ReadFull(c, back); err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	if !bytes.Equal(back, msg) {
		return errEchoMismatch
	}
	return nil
}

// echoStream sends msg as one binary message on a gobwas/ws stream and
// reads the next data message back through br (which the holder carries
// on), answering pings on the way, by deadline; c is closed when that
// fails.
func echoStream(c net.Conn, br *bufio.Reader, msg []byte, deadline time.Time) error {
	return closeOnError(c, echoFrame(c, br, msg, deadline))
}

func echoFrame(c net.Conn, br *bufio.Reader, msg []byte, deadline time.Time) error {
	_ = c.SetDeadline(deadline)
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write(wsframe.ClientFrame(ws.OpBinary, msg)); err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	rw := struct {
		io.Reader
		io.Writer
	}{br, c}
	back, _, err := wsutil.ReadServerData(rw)
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	if !bytes.Equal(back, msg) {
		return errEchoMismatch
	}
	return nil
}

// echoGorilla is echoStream on a gorilla/websocket connection.
func echoGorilla(c *websocket.Conn, msg []byte, deadline time.Time) error {
	_ = c.SetWriteDeadline(deadline)
	_ = c.SetReadDeadline(deadline)
	defer func() { _ = c.SetWriteDeadline(time.Time{}); _ = c.SetReadDeadline(time.Time{}) }()
	err := c.WriteMessage(websocket.BinaryMessage, msg)
	if err == nil {
		var back []byte
		if _, back, err = c.ReadMessage(); err == nil && !bytes.Equal(back, msg) {
			return closeOnError(c, errEchoMismatch)
		}
	}
	if err != nil {
		err = fmt.Errorf("echo: %w", err)
	}
	return closeOnError(c, err)
}

// maxGetBody bounds the body a -get response is read to: its end is the
// request's, and a burst's response is small.
const maxGetBody = 1 << 20

// get sends -get's request on a new TCP connection from src, reads the
// whole response, and closes the connection, within -timeout. A response
// with another status than -status is a failure named by its status.
func (r *run) get(ctx context.Context, src netip.Addr) error {
	deadline := time.Now().Add(r.cfg.Timeout)
	c, err := target.NetDialer(src, r.cfg.Timeout).DialContext(ctx, "tcp", r.u.Addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	if _, err := io.WriteString(c, r.request); err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	res, err := http.ReadResponse(bufio.NewReaderSize(c, 1024), nil)
	if err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	_, err = io.Copy(io.Discard, io.LimitReader(res.Body, maxGetBody))
	_ = res.Body.Close()
	if err != nil {
		return fmt.Errorf("GET: reading the body: %w", err)
	}
	r.answered.Add(1)
	if res.StatusCode != r.cfg.Status {
		return fmt.Errorf("GET answered HTTP %d %s, not the -status %d", res.StatusCode, http.StatusText(res.StatusCode), r.cfg.Status)
	}
	return nil
}
